package lifecycle

import "github.com/vigil-hpc/vigil/config"

// loadAdminSections decodes and validates [notify] and [guard] into s.
func loadAdminSections(f *config.File, s *Settings) []error {
	var errs []error
	if err := f.Decode("notify", &s.Notify); err != nil {
		errs = append(errs, err)
	} else if err := s.Notify.Validate(f); err != nil {
		errs = append(errs, splitErrors(err)...)
	}
	if err := f.Decode("guard", &s.Guard); err != nil {
		errs = append(errs, err)
	} else if err := s.Guard.Validate(f); err != nil {
		errs = append(errs, splitErrors(err)...)
	}
	return errs
}
