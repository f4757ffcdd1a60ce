package report

import "github.com/vigil-hpc/vigil/benchmarks"

// TakeComponents moves the components the results name
// (benchmarks.Result.Components) out of them and returns them once each,
// in the order the checks ran: the first result to name a component
// (kind and name) gives it, and later ones only fill fields it lacks. The
// run's report carries them in Report.Components.
func TakeComponents(results []benchmarks.Result) []benchmarks.Component {
	var out []benchmarks.Component
	at := map[[2]string]int{}
	for i := range results {
		for _, c := range results[i].Components {
			k := [2]string{c.Kind, c.Name}
			j, seen := at[k]
			if !seen {
				at[k] = len(out)
				out = append(out, c)
				continue
			}
			out[j] = fill(out[j], c)
		}
		results[i].Components = nil
	}
	return out
}

// fill returns c with each empty field taken from o.
func fill(c, o benchmarks.Component) benchmarks.Component {
	for _, f := range []struct{ dst, src *string }{
		{&c.UUID, &o.UUID}, {&c.Serial, &o.Serial}, {&c.GUID, &o.GUID}, {&c.Model, &o.Model}, {&c.PCI, &o.PCI},
	} {
		if *f.dst == "" {
			*f.dst = *f.src
		}
	}
	if c.Port == 0 {
		c.Port = o.Port
	}
	return c
}

// ComponentNamed returns the report's component that results call name
// ("gpu3"), or the one at PCI address name ("0000:3b:00.0", as gpu-count
// names a GPU that fell off the bus).
func (r *Report) ComponentNamed(name string) (benchmarks.Component, bool) {
	if name == "" {
		return benchmarks.Component{}, false
	}
	for _, c := range r.Components {
		if c.Name == name {
			return c, true
		}
	}
	for _, c := range r.Components {
		if c.PCI != "" && c.PCI == name {
			return c, true
		}
	}
	return benchmarks.Component{}, false
}
