package loop

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/internal/vendors"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/watcher/sample"
)

// accelerators opens the accelerator source: the --accel-trace file, else
// the sampler of each vendor whose devices the PCI probe finds under root
// (the prolog's probe, vendors.Probe), the first that opens; when the probe
// finds none, every vendor's sampler in table order (NVML, then DCMI), the
// first that opens; else none (the CPU then decides alone).
func accelerators(o Options, root string, job *slurm.Job, log logrus.FieldLogger) (sample.Accelerators, func(), error) {
	if o.AccelTrace != "" {
		return traceAccelerators(o, job, log)
	}
	rows, probed := samplerOrder(vendors.Probe(root))
	if !probed {
		log.Info("the PCI probe found no accelerator (no PCI function of a known vendor, no /dev node): trying each vendor's sampler in turn")
	}
	var errs []error
	for _, r := range rows {
		open, ok := sample.OpenerOf(r.Sampler)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no sampler %q in vigil-watch", r.Name, r.Sampler))
			continue
		}
		a, closeA, err := open(sample.Job{GPUs: job.GPUs, Lookup: o.lookup()})
		if err == nil {
			log.WithFields(logrus.Fields{"vendor": r.Name, "sampler": string(r.Sampler), "probed": probed}).
				Infof("sampling %s %ss through %s", r.Maker, r.Noun, strings.ToUpper(string(r.Sampler)))
			return a, closeA, nil
		}
		errs = append(errs, fmt.Errorf("%s (%s): %w", r.Name, r.Sampler, err))
	}
	if probed {
		log.WithError(errors.Join(errs...)).Warn("the PCI probe found accelerators, but their sampler does not open: the CPU decides alone")
	} else {
		log.WithError(errors.Join(errs...)).Info("no accelerators to sample")
	}
	return nil, func() {}, nil
}

// samplerOrder returns the vendors whose samplers to try, in order: those
// the probe found (probed true), else every row of the table.
func samplerOrder(found []vendors.Found) (rows []vendors.Row, probed bool) {
	for _, f := range found {
		rows = append(rows, f.Row)
	}
	if len(rows) > 0 {
		return rows, true
	}
	return vendors.Table, false
}

// traceAccelerators reads the accelerators from the --accel-trace file.
func traceAccelerators(o Options, job *slurm.Job, log logrus.FieldLogger) (sample.Accelerators, func(), error) {
	f, err := os.Open(o.AccelTrace)
	if err != nil {
		return nil, nil, fmt.Errorf("vigil-watch: --accel-trace: %w", err)
	}
	defer f.Close()
	t, err := sample.NewTraceAccelerators(f, job.NodeName)
	if err != nil {
		return nil, nil, fmt.Errorf("vigil-watch: --accel-trace %s: %w", o.AccelTrace, err)
	}
	log.WithFields(logrus.Fields{"accel_trace": o.AccelTrace, "lines": t.Len()}).Info("accelerator readings come from a recorded trace")
	return t, func() {}, nil
}
