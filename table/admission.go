package table

import (
	"strconv"
	"time"

	"github.com/berth-dev/berth/api"
)

// The admission kinds' columns, as kubectl prints them.
func init() {
	webhooks := func(n int) string { return strconv.Itoa(n) }
	definitions["ValidatingWebhookConfiguration"] = []Column{nameColumn,
		{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks configured.",
			cell: on(func(c *api.ValidatingWebhookConfiguration, _ time.Time) string { return webhooks(len(c.Webhooks)) })},
		ageColumn}
	definitions["MutatingWebhookConfiguration"] = []Column{nameColumn,
		{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks configured.",
			cell: on(func(c *api.MutatingWebhookConfiguration, _ time.Time) string { return webhooks(len(c.Webhooks)) })},
		ageColumn}
}
