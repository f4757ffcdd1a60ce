// Package judge holds the pure core of crossnet, the checks that span a job's
// nodes (net-connect, net-bandwidth, and later the multi-node collectives):
// which links to measure, and what the measurements say about each node.
// It does no networking, reads no clock and draws no randomness except from
// the seed its caller gives; the rendezvous that carries the measurements
// lives in package rendezvous, the phase in crossnet.
//
// The plan (Plan): a ring over the job's nodes in the order given, plus a
// few random partners per node drawn from a seed (the job id), so every
// node has at least two links with distinct peers when the job has three
// nodes or more, and the job measures O(N) links, never all pairs.
//
// The verdict (Decide): a link is bad when a connect across it failed. A
// node is a culprit only when the evidence points at it: most of its links
// are bad and at least two peers that work with the rest of the job failed
// with it, or, after a targeted re-test against known-good peers, two
// witnesses failed with it. A bad link whose ends cannot be told apart is
// re-tested once; a link that stays bad while both ends work with others is
// reported as a bad link with no culprit, and nobody is drained. A node is
// slow when its own links are slow with most of its peers, not when it was
// paired with one slow node. docs/prolog.md ("Across nodes: the culprit
// rule") tells the same story with examples.
package judge
