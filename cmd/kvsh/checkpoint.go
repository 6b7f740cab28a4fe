package main

import "fmt"

// cmdCheckpoint writes a checkpoint of the open store into DIR, which must
// not exist or be empty (shale.DB.Checkpoint).
func cmdCheckpoint(sh *shell, args []string, _ map[string]string) error {
	if err := sh.db.Checkpoint(args[0]); err != nil {
		return err
	}
	fmt.Fprintf(sh.out, "%s: checkpoint written\n", args[0])
	return nil
}
