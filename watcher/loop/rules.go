package loop

import (
	"fmt"

	"github.com/vigil-hpc/vigil/watcher/joblog"
)

// UseSiteRules makes the matcher use the site's [[watch.rules]] over the
// shipped rules, live and in replay alike.
func UseSiteRules(s Settings) error {
	site, err := s.LineRules()
	if err != nil {
		return fmt.Errorf("[watch] rules: %w", err)
	}
	joblog.SetSiteRules(site)
	return nil
}
