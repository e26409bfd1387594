package registry_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentos-run/agentos/actors/registry"
	"github.com/agentos-run/agentos/vfs"
)

func Example() {
	dir, _ := os.MkdirTemp("", "registry-example")
	defer os.RemoveAll(dir)
	jail, _ := vfs.Open(dir)
	defer jail.Close()

	r, err := registry.Open(jail, registry.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()

	src := []byte(`/** Calculates compound interest over years. @tag finance */
export default function compoundInterest(args: { principal: number; rate: number; years: number }) {
  return args.principal * Math.pow(1 + args.rate, args.years);
}
`)
	// The git actor writes the file; the registry registers it.
	_ = jail.WriteFile("tools/finance/compound_interest.ts", src)
	tool, _ := r.Register("tools/finance/compound_interest.ts", src)
	fmt.Println(tool.Name, tool.Version, tool.Tags)
	fmt.Println(tool.Description)
	fmt.Println(string(tool.Parameters))

	for _, h := range r.Search("compound interest calculator", 3) {
		fmt.Printf("%s %.2f reuse=%v\n", h.Path, h.Score, h.Score >= r.Threshold())
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "meta", "*.json"))
	fmt.Println("registry shards written:", len(shards))
	// Output:
	// compound_interest 1 [finance]
	// Calculates compound interest over years.
	// {"type":"object","properties":{"principal":{"type":"number"},"rate":{"type":"number"},"years":{"type":"number"}},"required":["principal","rate","years"]}
	// tools/finance/compound_interest.ts 1.00 reuse=true
	// registry shards written: 1
}
