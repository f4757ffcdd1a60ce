package decide

import "testing"

func TestValidateRunIsNamedInMessages(t *testing.T) {
	if in := (Inputs{Mode: ModeValidate}); who(in.Mode, false) != validateWho {
		t.Errorf("who = %q", who(in.Mode, false))
	}
}
