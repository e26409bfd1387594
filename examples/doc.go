// Package examples holds runnable programs, one per directory named
// <area>-<feature>, each a package main with a README.md showing the command
// and its real output. examples_test.go builds and runs every one of them,
// so an example that stops working fails the tests. See README.md.
package examples
