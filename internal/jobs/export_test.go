package jobs

// WithoutStagger returns opts with River's staggered start of maintenance services
// turned off, so that a test's Runner schedules jobs as soon as it leads.
func WithoutStagger(opts Options) Options {
	opts.noStagger = true
	return opts
}
