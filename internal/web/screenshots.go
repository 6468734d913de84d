// Package web holds what the server-rendered sites (console/, dashboard/, built
// of webkit/) show beyond their own pages: the screenshots their layout tests
// take, embedded so the guides served under /docs show the very pages they
// describe, as the tests last saw them, without a second copy to keep in step.
package web

import "embed"

// Screenshots holds console/testdata/*.png and dashboard/testdata/*.png under
// those paths. A guide links them by their place in the repository; the docs
// serve them (internal/contract/docs) so the link works in both.
//
//go:embed console/testdata/*.png dashboard/testdata/*.png
var Screenshots embed.FS
