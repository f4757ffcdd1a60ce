package hccl

import (
	"errors"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// Result is an HcclResult.
type Result int

// Result values (hccl_types.h, enum HcclResult), in the header's order;
// codes.Names has their names there.
const (
	Success Result = iota
	EPara
	EPtr
	EMemory
	EInternal
	ENotSupport
	ENotFound
	EUnavail
	ESyscall
	ETimeout
	EOpenFileFailure
	ETCPConnect
	ERoCEConnect
	ETCPTransfer
	ERoCETransfer
	ERuntime
	EDrv
	EProfiling
	ECCE
	ENetwork
	EAgain
	ERemote
	ESuspending
)

// ErrLink is matched (errors.Is) by results that mean the links between
// devices failed: RoCE connect or transfer failures, remote completion
// errors, timeouts, driver failures.
var ErrLink = errors.New("collective link failure")

// Name is the header's name of r, or "HcclResult(N)".
func (r Result) Name() string { return codes.Name(r) }

// Matches says whether r is one of the codes of ErrLink.
func (r Result) Matches(target error) bool { return codes.Matches(r, target) }

// Error is a failed HCCL call; Text is HcclGetErrorString's description.
type Error = dl.Error[Result]

// codes are the header's names of the Result values and the codes of
// ErrLink.
var codes = dl.Codes[Result]{
	Unknown:   "HcclResult(%d)",
	Sentinels: map[error][]Result{ErrLink: {ERoCEConnect, ERoCETransfer, ERemote, ETimeout, EDrv}},
	Names: map[Result]string{
		Success: "HCCL_SUCCESS", EPara: "HCCL_E_PARA", EPtr: "HCCL_E_PTR", EMemory: "HCCL_E_MEMORY",
		EInternal: "HCCL_E_INTERNAL", ENotSupport: "HCCL_E_NOT_SUPPORT", ENotFound: "HCCL_E_NOT_FOUND",
		EUnavail: "HCCL_E_UNAVAIL", ESyscall: "HCCL_E_SYSCALL", ETimeout: "HCCL_E_TIMEOUT",
		EOpenFileFailure: "HCCL_E_OPEN_FILE_FAILURE", ETCPConnect: "HCCL_E_TCP_CONNECT",
		ERoCEConnect: "HCCL_E_ROCE_CONNECT", ETCPTransfer: "HCCL_E_TCP_TRANSFER",
		ERoCETransfer: "HCCL_E_ROCE_TRANSFER", ERuntime: "HCCL_E_RUNTIME", EDrv: "HCCL_E_DRV",
		EProfiling: "HCCL_E_PROFILING", ECCE: "HCCL_E_CCE", ENetwork: "HCCL_E_NETWORK",
		EAgain: "HCCL_E_AGAIN", ERemote: "HCCL_E_REMOTE", ESuspending: "HCCL_E_SUSPENDING",
	},
}
