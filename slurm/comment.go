package slurm

import "strings"

// CommentSep separates the user's part of a job comment from vigil's part
// ("<user comment>; vigil: passed (38 s)").
const CommentSep = "; "

// SplitComment splits a job comment into the user's part and vigil's part,
// which starts at the last ReasonPrefix ("vigil: ") and runs to the end.
// The prolog's status and the watcher's hang notice are both vigil's part:
// each replaces it, and the user's text is kept.
func SplitComment(c string) (user, vigil string) {
	i := strings.LastIndex(c, ReasonPrefix+" ")
	if i < 0 {
		return c, ""
	}
	return strings.TrimSuffix(strings.TrimRight(c[:i], " "), strings.TrimSpace(CommentSep)), c[i:]
}

// JoinComment is the job comment of the user's part and vigil's part.
func JoinComment(user, vigil string) string {
	if user == "" {
		return vigil
	}
	return user + CommentSep + vigil
}
