package config

import (
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/internal/vendors"
	"github.com/vigil-hpc/vigil/internal/xid"
)

// Remedies, the rungs of a [repair] ladder.
const (
	// RemedyReset resets the failed device with the vendor's tool
	// ([repair.reset]), outside any job and only while no process holds it.
	RemedyReset = "reset"
	// RemedyReboot asks Slurm to reboot the node (scontrol reboot; needs
	// RebootProgram in slurm.conf).
	RemedyReboot = "reboot"
)

// Next states of a reboot ([repair] reboot_nextstate).
const (
	// NextStateDrain keeps vigil's drain through the reboot (scontrol
	// reboot without ASAP or nextstate): the node comes back drained and
	// vigil's drain rule re-tests it before it resumes it.
	NextStateDrain = "drain"
	// NextStateDown asks for ASAP nextstate=DOWN: the node comes back DOWN
	// with vigil's reason and Slurm's "reboot complete"; vigil re-tests it
	// and resumes it. Needs ReturnToService 0 or 1.
	NextStateDown = "down"
	// NextStateResume asks for ASAP nextstate=RESUME: Slurm puts the node
	// back in service when it is up again, without vigil's re-test.
	NextStateResume = "resume"
)

// IndexPlaceholder in a [repair.reset] command stands for the device's
// index ("3" for gpu3).
const IndexPlaceholder = vendors.IndexPlaceholder

// Repair is the [repair] section: what vigil does about a failure beyond
// draining the node. Per reason token or check, a ladder of remedies is
// tried in order, one rung per failure of the same component (the node's
// device) within Window; after MaxRemedies of them the node stays drained
// as NeedsService and is never resumed by vigil. Off unless Enabled. See
// docs/operations.md, "Repair ladder".
type Repair struct {
	// Enabled turns the remedies on; off, a failure only drains.
	Enabled bool `toml:"enabled" env:"VIGIL_REPAIR" arg:"true|false" usage:"[repair] enabled: remedies beyond the drain"`
	// MaxRemedies is how many remedies one component gets within Window;
	// the next failure leaves the node drained as NeedsService.
	MaxRemedies int `toml:"max_remedies"`
	// Window is the period over which remedies are counted ("7d", "168h").
	Window Days `toml:"window"`
	// RebootNextState is "drain", "down" or "resume": the state the node
	// comes back in after a reboot vigil asked for.
	RebootNextState string `toml:"reboot_nextstate"`
	// ResetTimeout bounds one reset command ("2m"), within the run's budget.
	ResetTimeout time.Duration `toml:"reset_timeout"`
	// Ladders are the remedies per reason token ("XID79") or check name
	// ("xid"), in the order they are tried; a reason's ladder wins over its
	// check's. An empty ladder turns a shipped one off.
	Ladders map[string][]string `toml:"ladders"`
	// Reset is the reset command per vendor (the names of the vendor
	// table: "nvidia", "ascend"), an argv whose IndexPlaceholder is
	// replaced by the device's index; its program is an absolute path.
	Reset map[string][]string `toml:"reset"`
}

// DefaultRepair returns the shipped [repair] settings: off; the ladders
// of the XIDs whose catalogue entry says reset the GPU (reset, then
// reboot) or reboot the node (reboot), and of the row-remap check's
// pending remap and page retirement (reset, then reboot); three remedies
// a week; the vendors' reset tools, from the vendor table.
func DefaultRepair() Repair {
	ladders := map[string][]string{
		"RowRemapPending":     {RemedyReset, RemedyReboot},
		"RetiredPagesPending": {RemedyReset, RemedyReboot},
	}
	for _, i := range xid.Catalogue() {
		switch i.Remedy {
		case xid.RemedyResetGPU:
			ladders[xidToken(i.Code)] = []string{RemedyReset, RemedyReboot}
		case xid.RemedyRebootNode:
			ladders[xidToken(i.Code)] = []string{RemedyReboot}
		}
	}
	return Repair{MaxRemedies: 3, Window: Days(7 * 24 * time.Hour), RebootNextState: NextStateDrain,
		ResetTimeout: 2 * time.Minute, Ladders: ladders,
		Reset: defaultResets()}
}

// defaultResets is the reset command of each vendor of the table that has
// one (vendors.Row.Reset).
func defaultResets() map[string][]string {
	out := map[string][]string{}
	for _, r := range vendors.Table {
		if len(r.Reset) > 0 {
			out[r.Name] = slices.Clone(r.Reset)
		}
	}
	return out
}

// repairOverrides is the table of the [repair] keys the environment sets.
var repairOverrides = NewOverrides("repair", DefaultRepair())

// RepairOverrides is the table of the [repair] keys that the environment
// may set (VIGIL_REPAIR for enabled); no flag sets them.
func RepairOverrides() *Overrides { return repairOverrides }

// NextStates are the values of reboot_nextstate.
var NextStates = []string{NextStateDrain, NextStateDown, NextStateResume}

// Validate checks r's values, naming the key and line of each bad one in
// f. Which reason tokens and checks a ladder may name is the loader's to
// check (it knows the checks).
func (r Repair) Validate(f *File) error {
	var errs []error
	if r.MaxRemedies < 1 || r.MaxRemedies > 100 {
		errs = append(errs, f.Errorf("repair.max_remedies", "%d: want 1 to 100", r.MaxRemedies))
	}
	if time.Duration(r.Window) < time.Minute {
		errs = append(errs, f.Errorf("repair.window", "%v: want at least 1m (\"7d\", \"36h\")", r.Window))
	}
	if !slices.Contains(NextStates, r.RebootNextState) {
		errs = append(errs, f.Errorf("repair.reboot_nextstate", "%q: want %s", r.RebootNextState, strings.Join(NextStates, ", ")))
	}
	if r.ResetTimeout < time.Second || r.ResetTimeout > 10*time.Minute {
		errs = append(errs, f.Errorf("repair.reset_timeout", "%v: want 1s to 10m", r.ResetTimeout))
	}
	for _, key := range sortedKeys(r.Ladders) {
		for _, rung := range r.Ladders[key] {
			if rung != RemedyReset && rung != RemedyReboot {
				errs = append(errs, f.Errorf("repair.ladders."+key, "%q: want %q or %q", rung, RemedyReset, RemedyReboot))
			}
		}
	}
	for _, v := range sortedKeys(r.Reset) {
		key := "repair.reset." + v
		argv := r.Reset[v]
		switch {
		case !isVendor(v):
			errs = append(errs, f.Errorf(key, "%q is not a vendor (vendors: %s)", v, strings.Join(vendorNames(), ", ")))
		case len(argv) == 0:
			errs = append(errs, f.Errorf(key, "empty: want the command's argv, its program an absolute path"))
		case !filepath.IsAbs(argv[0]):
			errs = append(errs, f.Errorf(key, "%q: want an absolute path (the prolog runs without PATH)", argv[0]))
		}
	}
	return errors.Join(errs...)
}

// Ladder is the ladder for a failure of check with reason: the reason's,
// else the check's; nil when there is none or it is empty.
func (r Repair) Ladder(check, reason string) []string {
	if l, ok := r.Ladders[reason]; ok && reason != "" {
		return l
	}
	return r.Ladders[check]
}

// xidToken is the xid check's reason token of an XID ("XID79").
func xidToken(code int) string { return "XID" + strconv.Itoa(code) }

func isVendor(name string) bool {
	_, ok := vendors.Lookup(name)
	return ok
}

func vendorNames() []string {
	var out []string
	for _, r := range vendors.Table {
		out = append(out, r.Name)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
