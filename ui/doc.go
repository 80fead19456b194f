// Package ui is berth's web dashboard: server-rendered pages of the
// sources, the objects they applied and the nodes, kept live by
// server-sent events fed from API watches. Every read and action goes
// through the API with the viewer's own token, so the API's authorization
// decides what a viewer sees.
package ui
