// Command deliver is the deliver Lambda of the archmax bundle (DESIGN.md §1). It is a placeholder
// until the "Durable on AWS" issue wires it to the engine; built, it reports that.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "functions/deliver: not wired yet (see docs/ARCHITECTURE.md)")
	os.Exit(1)
}
