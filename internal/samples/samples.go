// Package samples holds reference tools shared by the demo, the tests and
// the benchmarks, so that every package measures and checks the same code.
package samples

import "strings"

// FibPath is where the demo and the tests keep FibTool.
const FibPath = "tools/math/fib.ts"

// FibTool is the seed's fibonacci tool (iterative): valid, risk low,
// fib(10) = 55. It is the tool the performance targets are stated for.
const FibTool = `/** Returns the n-th Fibonacci number. */
export default function fib(args: { n: number }): number {
  const n = args.n;
  if (n <= 1) return n;
  let a = 0, b = 1;
  for (let i = 2; i <= n; i++) {
    const temp = a + b;
    a = b;
    b = temp;
  }
  return b;
}
`

// FibForged is a fibonacci tool as a model forges it for FibPath: it
// validates its argument, passes check_tool, and passes FibForgedTests.
const FibForged = `/** Returns the n-th Fibonacci number. @tag math */
export default function fib(args: { n: number }): number {
  if (!Number.isInteger(args.n) || args.n < 0) {
    throw new Error("n must be a non-negative integer");
  }
  let a = 0;
  let b = 1;
  for (let i = 0; i < args.n; i++) {
    const next = a + b;
    a = b;
    b = next;
  }
  return a;
}
`

// FibForgedBuggy is FibForged off by one (it returns b): it passes
// check_tool and fails FibForgedTests with "fib(0) = 1, want 0".
var FibForgedBuggy = strings.Replace(FibForged, "return a;", "return b;", 1)

// FibForgedTests are the tests forged with FibForged, living beside it.
const FibForgedTests = `const fib = require('./fib').default;
export default async function (): Promise<void> {
  const cases: Array<[number, number]> = [[0, 0], [1, 1], [2, 1], [10, 55]];
  for (const [n, want] of cases) {
    const got = fib({ n });
    if (got !== want) {
      throw new Error("fib(" + n + ") = " + got + ", want " + want);
    }
  }
}
`
