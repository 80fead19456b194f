// Package helmrepo is the source of a chart in a Helm chart repository:
// it reads the repository's index.yaml over HTTP, picks the chart's
// version, downloads its package and hands its files to the decoder as a
// chart to render.
package helmrepo
