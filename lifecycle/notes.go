package lifecycle

import "fmt"

// notes are the report's notes (report.Report.Notes): what a run says
// about itself besides the results. The run owns them and hands them to
// the parts that have something to say; each note lands in the report at
// once, in the order the run said it.
type notes struct{ list *[]string }

// add appends one note, formatted as by fmt.Sprintf.
func (n notes) add(format string, args ...any) {
	*n.list = append(*n.list, fmt.Sprintf(format, args...))
}
