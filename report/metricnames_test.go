package report

// MetricNames are the names of the metric families vigil writes to its
// textfile, in the order they appear there.
func MetricNames() []string {
	names := make([]string, len(families))
	for i, f := range families {
		names[i] = f.name
	}
	return names
}
