// Command hello prints a greeting; BuildBinary's test builds it.
package main

import "fmt"

func main() { fmt.Println("hello") }
