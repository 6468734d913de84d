package jobs

// WithoutStagger returns opts with River's staggered start of maintenance services
// turned off, so that a test's Runner schedules jobs as soon as it leads.
func WithoutStagger(opts Options) Options {
	opts.noStagger = true
	return opts
}

// Suppressed is how many warnings and errors the Runner's log has counted
// instead of writing (quietlog).
func (r *Runner) Suppressed() int { return r.quiet.Suppressed() }

// Lines of an outage of the job queue, for tests.
const (
	DownLine = downLine
	UpLine   = upLine
)
