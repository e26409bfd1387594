package mcpserver

// SetAfterSourceHash sets the hook called between the read of the source a
// confirmation is tied to and the approval gate's judgment (nil: none).
func SetAfterSourceHash(f func(path string)) { afterSourceHash = f }
