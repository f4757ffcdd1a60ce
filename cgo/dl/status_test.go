package dl

import (
	"errors"
	"testing"
)

var errFake = errors.New("fake fault")

type fakeCode int

var fakeCodes = Codes[fakeCode]{
	Unknown:   "fakeResult(%d)",
	Sentinels: map[error][]fakeCode{errFake: {7}},
	Names:     map[fakeCode]string{0: "FAKE_SUCCESS", 7: "FAKE_FAULT", 8: "FAKE_BUSY"},
}

func (c fakeCode) Name() string              { return fakeCodes.Name(c) }
func (c fakeCode) Matches(target error) bool { return fakeCodes.Matches(c, target) }

func TestNewError(t *testing.T) {
	lib := func(s string) func(fakeCode) string { return func(fakeCode) string { return s } }
	tests := []struct {
		name       string
		code       fakeCode
		nameFn     func(fakeCode) string
		textFn     func(fakeCode) string
		want       string
		isSentinel bool
	}{
		{"table", 7, nil, nil, "fakeCall: FAKE_FAULT (7)", true},
		{"library's name and text", 8, lib("FAKE_BUSY_LIB"), lib("the device is busy"), "fakeCall: FAKE_BUSY_LIB (8): the device is busy", false},
		{"library says nothing", 8, lib(""), lib(""), "fakeCall: FAKE_BUSY (8)", false},
		{"text that only repeats the name", 8, nil, lib("FAKE_BUSY"), "fakeCall: FAKE_BUSY (8)", false},
		{"unknown", 42, nil, nil, "fakeCall: fakeResult(42) (42)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewError("fakeCall", tt.code, tt.nameFn, tt.textFn)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if errors.Is(err, errFake) != tt.isSentinel {
				t.Errorf("errors.Is(errFake) = %v", !tt.isSentinel)
			}
			var e *Error[fakeCode]
			if !errors.As(err, &e) || e.Code != tt.code {
				t.Errorf("errors.As = %+v", e)
			}
		})
	}
	called := false
	if err := NewError("fakeCall", fakeCode(0), nil, func(fakeCode) string { called = true; return "" }); err != nil || called {
		t.Errorf("success: err %v, text asked %v", err, called)
	}
}

func TestErrorWithoutName(t *testing.T) {
	// An Error written as a literal (a fake device's) names its code itself.
	err := &Error[fakeCode]{Op: "fakeCall", Code: 7}
	if got := err.Error(); got != "fakeCall: FAKE_FAULT (7)" {
		t.Errorf("Error() = %q", got)
	}
}

func TestWithDefaults(t *testing.T) {
	o := Options{Dirs: []string{"/opt/a"}}
	got := o.WithDefaults([]string{"libfake.so"}, []string{"/usr/lib/fake"})
	if len(got.Names) != 1 || got.Names[0] != "libfake.so" || len(got.Dirs) != 2 || got.Dirs[1] != "/usr/lib/fake" {
		t.Errorf("WithDefaults = %+v", got)
	}
	if len(o.Dirs) != 1 {
		t.Errorf("o changed: %+v", o)
	}
	mine := Options{Names: []string{"libmine.so"}}.WithDefaults([]string{"libfake.so"}, nil)
	if len(mine.Names) != 1 || mine.Names[0] != "libmine.so" {
		t.Errorf("own names replaced: %+v", mine)
	}
}
