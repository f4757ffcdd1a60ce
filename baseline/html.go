package baseline

import (
	"errors"
	"io"
)

// WriteHTML writes one self-contained page with a plot per metric.
func WriteHTML(w io.Writer, groups []*Group) error {
	return errors.New("html: not written yet")
}
