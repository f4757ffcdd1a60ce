package benchmarks

import (
	"context"
	"encoding/json"
)

// Tokens of the unknown outcomes every check of ScopeCrossNode can give,
// its own aside: the cross-node phase (benchmarks/crossnet) could not run,
// the nodes did not meet or could not tell, or the check ran outside the
// phase. They belong to the scope, so that a check declares its scope in
// its Descriptor and needs nothing of the phase's package.
const (
	// ReasonNotTogether: PrologFlags=Alloc is not set, so the job's
	// prologs do not run at the same time and cannot meet.
	ReasonNotTogether = "PrologNotAlloc"
	// ReasonNoMeeting: the rendezvous failed (coordinator absent or lost,
	// this node late, MUNGE unavailable).
	ReasonNoMeeting = "NetRendezvousFailed"
	// ReasonUndecided: the measurements could not tell (an ambiguous bad
	// link, no working link, the node's outcome did not arrive).
	ReasonUndecided = "NetUndecided"
	// ReasonSetup: the phase could not start (no node address, no
	// endpoint, invalid settings).
	ReasonSetup = "NetSetupFailed"
	// ReasonOutsideProlog: the check was run on its own, outside the
	// prolog's cross-node phase.
	ReasonOutsideProlog = "NetNotInPhase"
	// ReasonEndpointBusy: a peer found this node's measurement endpoint
	// full of connections that were not the job's (a process of anyone's
	// holding the port), so a link could not be measured.
	ReasonEndpointBusy = "NetEndpointBusy"
)

// CrossNodeReasons are the tokens every check of ScopeCrossNode can give,
// its own aside.
func CrossNodeReasons() []string {
	return []string{ReasonNotTogether, ReasonNoMeeting, ReasonSetup, ReasonUndecided, ReasonOutsideProlog, ReasonEndpointBusy}
}

// CollectiveCheck is a cross-node check that runs one operation over the
// devices of all the job's nodes (nccl-allreduce-multinode). It is
// registered like every other check (Scope ScopeCrossNode) by the package of
// its vendor, and the cross-node phase (benchmarks/crossnet) drives it in
// four rounds after the links:
//
//  1. each node says how many ranks it brings (Ranks; 0: it takes no part);
//  2. the coordinator numbers the ranks in sorted node order (Roles), calls
//     Setup once and broadcasts the setup, the total and each node's first
//     rank;
//  3. each node with ranks runs its part (RunRanks) within its deadline;
//  4. the coordinator gathers the results, and each node's verdict is its
//     own result, told which peers never joined.
//
// Setup and RunRanks are called in the prolog process itself, not in a checker
// child: NCCL starts its bootstrap inside the process that makes the id,
// and that process must stay alive until every rank has joined. The
// coordinator's prolog lives through all four rounds, and runs its own
// ranks (rank 0 when it has GPUs) in the same process.
type CollectiveCheck interface {
	Check
	// Ranks is how many ranks this node brings (its GPUs); 0 when none.
	Ranks(env *Env) int
	// Setup makes what every rank needs to meet (NCCL's unique id). It is
	// called once, on the coordinator, in the process that stays alive.
	Setup(env *Env) ([]byte, error)
	// RunRanks runs this node's ranks first .. first+Ranks-1 of total within
	// ctx's deadline.
	RunRanks(ctx context.Context, env *Env, setup []byte, first, total int) Result
}

// JobJudge is implemented by a CollectiveCheck that judges the nodes' results
// together before each node gets its own (on the coordinator): a failure
// every node reports alike may say more about the run than about any node.
// JudgeJob may change the results in place (node → result).
type JobJudge interface {
	JudgeJob(results map[string]*Result)
}

// PeerCheck is a cross-node check that compares one fact of the job's
// nodes (their RDMA fabric: rdma-peers) instead of measuring links. It is
// registered like every other check (Register, with Scope ScopeCrossNode)
// by the package that knows the fact, and the phase (benchmarks/crossnet) runs it: each
// node reads its fact and sends it with its measurements, the coordinator
// judges the facts of the nodes that met, and each node gets its verdict.
type PeerCheck interface {
	Check
	// Read reads this node's fact, JSON-encodable and small (it travels
	// in the sealed rendezvous). settings decodes a check's [checks.NAME]
	// into v (its defaults beforehand), so that a check can read the
	// section of another that already names a setting (a root).
	Read(settings func(check string) func(v any) error) (json.RawMessage, error)
	// Judge compares the reports of the nodes that met (node → report)
	// and returns each node's verdict; absent are the nodes that never
	// met, for the messages. Pure.
	Judge(reports map[string]PeerReport, absent []string) map[string]PeerVerdict
	// Values are this node's own figures, from its own payload (nil when
	// it could not read it).
	Values(payload json.RawMessage) []Value
}

// PeerReport is one node's fact for a PeerCheck, as the coordinator gets it.
type PeerReport struct {
	// Payload is what the node's Read returned; nil when it failed.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Error says why the node has no payload.
	Error string `json:"error,omitempty"`
}

// PeerVerdict is one check's outcome for one node, as the coordinator tells
// it: its result without values (each node adds its own figures).
type PeerVerdict struct {
	// Check is the check's name.
	Check string `json:"check"`
	// Status is pass, fail or unknown.
	Status Status `json:"status"`
	// Reason is the stable token of a fail or unknown.
	Reason string `json:"reason,omitempty"`
	// Message is for people.
	Message string `json:"message"`
	// Device is the device field of the drain reason ("" for the node).
	Device string `json:"device,omitempty"`
}
