// Package samples holds reference tools shared by the demo, the tests and
// the benchmarks, so that every package measures and checks the same code.
package samples

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
