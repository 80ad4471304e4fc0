/**
 * Runs a table transcribed from an upstream test file: every case runs, the test fails listing the
 * cases that fail without being declared deviations, and also when a declared deviation passes
 * (so that the list in operator/sandbox/README.md stays honest).
 */
import type { Test } from 'tap'

/** One case: `check` returns undefined when the sandbox agrees with upstream, else what differs. */
export interface UpstreamCase {
  name: string
  check(): string | undefined
}

/** The figures for the README: passed / total / declared deviations. */
export interface TableCounts {
  passed: number
  total: number
  deviations: number
}

/**
 * Runs `cases`; `deviations` names (exactly) the cases known to differ, each with its reason.
 * Prints one line of counts in the tap output.
 */
export function runUpstreamTable(t: Test, table: string, cases: UpstreamCase[], deviations: Record<string, string> = {}): TableCounts {
  const failing: string[] = []
  const passingDeviations: string[] = []
  const names = new Set<string>()
  let passed = 0
  for (const c of cases) {
    if (names.has(c.name)) throw new Error(`${table}: duplicate case name ${c.name}`)
    names.add(c.name)
    let problem: string | undefined
    try {
      problem = c.check()
    } catch (e) {
      problem = `threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`
    }
    if (problem === undefined) {
      passed++
      if (Object.hasOwn(deviations, c.name)) passingDeviations.push(c.name)
    } else if (!Object.hasOwn(deviations, c.name)) failing.push(`${c.name}: ${problem}`)
  }
  const unknown = Object.keys(deviations).filter((d) => !names.has(d))
  t.same(failing, [], `${table}: every case passes or is a declared deviation`)
  t.same(passingDeviations, [], `${table}: no declared deviation passes`)
  t.same(unknown, [], `${table}: every declared deviation names a case`)
  const counts = { passed, total: cases.length, deviations: Object.keys(deviations).length }
  t.comment(`${table}: ${counts.passed} passed / ${counts.total} total / ${counts.deviations} declared deviations`)
  return counts
}

/** The message a call throws, or undefined when it returns. */
export function errorOf(call: () => unknown): string | undefined {
  try {
    call()
    return undefined
  } catch (e) {
    return e instanceof Error ? e.message : String(e)
  }
}
