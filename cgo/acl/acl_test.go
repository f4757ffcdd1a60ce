package acl

import (
	"errors"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

func TestOpenMissing(t *testing.T) {
	_, err := Open(dl.Options{Names: []string{"libascendcl.so.vigil-absent"}})
	if !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "libascendcl.so.vigil-absent not found") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "/usr/local/Ascend/ascend-toolkit/latest/lib64") {
		t.Errorf("error %q does not name the CANN directories searched", err)
	}
}

func TestOpenWrongLibrary(t *testing.T) {
	_, err := Open(dl.Options{Names: []string{"libc.so.6"}})
	if !errors.Is(err, dl.ErrSymbol) {
		t.Fatalf("err = %v, want dl.ErrSymbol", err)
	}
	for _, s := range []string{"aclInit", "aclrtMalloc", "aclrtEventElapsedTime"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
}

func TestOpenOpsWrongLibrary(t *testing.T) {
	_, err := OpenOps(dl.Options{Names: []string{"libc.so.6"}}, dl.Options{Names: []string{"libm.so.6"}}, nil)
	if !errors.Is(err, dl.ErrSymbol) {
		t.Fatalf("err = %v, want dl.ErrSymbol", err)
	}
	for _, s := range []string{"aclCreateTensor", "aclnnMatmulGetWorkspaceSize"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	_, err = OpenOps(dl.Options{Names: []string{"libnnopbase.so.vigil-absent"}}, dl.Options{}, nil)
	if !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "libnnopbase.so.vigil-absent not found") {
		t.Fatalf("err = %v", err)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name          string
		code          Code
		msg           string
		want          string
		device, nodev bool
	}{
		{"aicore exception", 507015, "EZ9999: aicore error", "aclnnMatmul: ACL_ERROR_RT_AICORE_EXCEPTION (507015): EZ9999: aicore error", true, false},
		{"task abort", 107022, "", "aclnnMatmul: ACL_ERROR_RT_DEVICE_TASK_ABORT (107022)", true, false},
		{"driver", 500004, "", "aclnnMatmul: ACL_ERROR_DRV_FAILURE (500004)", true, false},
		{"bad device", 107001, "", "aclnnMatmul: ACL_ERROR_RT_INVALID_DEVICEID (107001)", false, true},
		{"oom", 207001, "", "aclnnMatmul: ACL_ERROR_RT_MEMORY_ALLOCATION (207001)", false, false},
		{"nn param", 161002, "", "aclnnMatmul: ACLNN_ERR_PARAM_INVALID (161002)", false, false},
		{"unknown", 123, "", "aclnnMatmul: aclError(123) (123)", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := newError("aclnnMatmul", tt.code, func() string { return tt.msg })
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if errors.Is(err, ErrDevice) != tt.device {
				t.Errorf("Is(ErrDevice) = %v", !tt.device)
			}
			if errors.Is(err, ErrNoDevice) != tt.nodev {
				t.Errorf("Is(ErrNoDevice) = %v", !tt.nodev)
			}
		})
	}
	if newError("x", Success, nil) != nil {
		t.Error("ACL_SUCCESS is an error")
	}
}
