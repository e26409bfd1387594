package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", "", "module root that import paths are relative to (default: nearest directory with go.mod)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: go run github.com/agentos-run/agentos/internal/protogen [-root dir] file.proto...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*root, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

// run generates the Go for args (paths relative to the current directory) and
// writes each output file next to its .proto.
func run(root string, args []string) error {
	if len(args) == 0 {
		return errors.New("no .proto file named: pass the files to compile, e.g. `protogen registry.proto`")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	if root == "" {
		if root, err = moduleRoot(cwd); err != nil {
			return err
		}
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(args))
	for _, a := range args {
		if !filepath.IsAbs(a) {
			a = filepath.Join(cwd, a)
		}
		name, err := protoName(root, a)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	out, err := Generate(root, names)
	if err != nil {
		return err
	}
	for _, f := range out {
		path := filepath.Join(root, filepath.FromSlash(f.Name))
		if err := os.WriteFile(path, f.Content, 0o644); err != nil {
			return fmt.Errorf("write generated file: %w", err)
		}
	}
	return nil
}

// moduleRoot returns the nearest directory at or above dir holding go.mod.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod in %s or any parent: run protogen inside the module, or pass -root", dir)
		}
		d = parent
	}
}

// protoName turns an absolute file path into its import name: the path
// relative to root, with forward slashes.
func protoName(root, abs string) (string, error) {
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || filepath.IsAbs(rel) || len(rel) >= 3 && rel[:3] == ".."+string(filepath.Separator) {
		return "", fmt.Errorf("%s is outside the module root %s: protogen compiles only the module's own .proto files", abs, root)
	}
	return filepath.ToSlash(rel), nil
}
