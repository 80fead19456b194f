package ui

import (
	"html/template"
	"strings"
)

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	// short is a revision as one reads it: a commit's first 12 digits.
	"short": func(rev string) string {
		if len(rev) > 12 && !strings.ContainsAny(rev, ":/") {
			return rev[:12]
		}
		return rev
	},
	"lower": strings.ToLower,
	// sourceLink is a Source's page.
	"sourceLink": func(name string) string { return Prefix + "sources/" + pathEscape(name) },
	"objectLink": objectLink,
}
