package table

import (
	"strings"
	"time"

	"github.com/berth-dev/berth/api"
)

// The RBAC kinds' columns, as kubectl prints them: a role's creation time
// (RFC 3339, not an age), a binding's role and, wide, its subjects by kind.
func init() {
	definitions["Role"] = []Column{nameColumn, createdAtColumn}
	definitions["ClusterRole"] = []Column{nameColumn, createdAtColumn}
	definitions["RoleBinding"] = bindingColumns(func(b *api.RoleBinding) (api.RoleRef, []api.Subject) { return b.RoleRef, b.Subjects })
	definitions["ClusterRoleBinding"] = bindingColumns(func(b *api.ClusterRoleBinding) (api.RoleRef, []api.Subject) { return b.RoleRef, b.Subjects })
}

func bindingColumns[T api.Object](of func(T) (api.RoleRef, []api.Subject)) []Column {
	subjects := func(kind string) func(api.Object, time.Time) string {
		return on(func(b T, _ time.Time) string {
			_, ss := of(b)
			var names []string
			for _, s := range ss {
				switch {
				case s.Kind != kind:
				case kind == api.SubjectServiceAccount:
					names = append(names, s.Namespace+"/"+s.Name)
				default:
					names = append(names, s.Name)
				}
			}
			return strings.Join(names, ", ")
		})
	}
	return []Column{
		nameColumn,
		{Name: "Role", Type: "string", Description: "RoleRef is the reference to the role the binding grants.",
			cell: on(func(b T, _ time.Time) string {
				ref, _ := of(b)
				return ref.Kind + "/" + ref.Name
			})},
		ageColumn,
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the binding.", cell: subjects(api.SubjectUser)},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the binding.", cell: subjects(api.SubjectGroup)},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the binding.", cell: subjects(api.SubjectServiceAccount)},
	}
}
