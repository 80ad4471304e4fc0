/**
 * structured-merge-diff's typed value tables, run against the apply engine's merge and comparison.
 *
 * Source: https://github.com/kubernetes-sigs/structured-merge-diff at v6.3.0 (commit d3e4dc6),
 * the version Kubernetes 1.34 vendors: `typed/merge_test.go` (`mergeCases`: `lhs.Merge(rhs)` must
 * equal `out`, `value.Equals`) and `typed/symdiff_test.go` (`symdiffCases`: `lhs.Compare(rhs)` must
 * give exactly the `added`, `modified` and `removed` sets, and the reverse comparison the mirror
 * image), transcribed into `test/fixtures/smd-typed-tables.json` by
 * `node test/support/smd-transcribe.ts <smd repository>`. Cases that deviate are declared below with
 * the reason, and checked to still deviate.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { compareObjects, mergeObjects } from '../operator/sandbox/apply/index.ts'
import { equals, fromPaths, toFieldsV1 } from '../operator/sandbox/apply/fieldset.ts'
import { deepEqual } from '../operator/kube/json.ts'
import type { Json, JsonObject } from '../operator/sandbox/types.ts'
import { type SchemaType, topologies } from './support/smd-schema.ts'
import { runUpstreamTable, type UpstreamCase } from './support/upstream-table.ts'

interface Table<Row> {
  name: string
  root: string
  schema: { types: SchemaType[] }
  rows: Row[]
}
interface Fixture {
  merge: (Omit<Table<never>, 'rows'> & { triplets: { lhs: Json; rhs: Json; out: Json }[] })[]
  symdiff: (Omit<Table<never>, 'rows'> & { quints: { lhs: Json; rhs: Json; removed: string[][]; modified: string[][]; added: string[][] }[] })[]
}

const fixture = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'smd-typed-tables.json'), 'utf8')) as Fixture

const obj = (v: Json): JsonObject => (v ?? {}) as JsonObject

/** Cases that deviate, by name, with the reason (operator/sandbox/README.md repeats them). */
const SEPARABLE =
  "structured-merge-diff's untyped separable type (maps separable, lists associative) has no counterpart in the engine's topologies: neither a built-in kind nor a CRD schema gives one (x-kubernetes-preserve-unknown-fields is the deduced type, whose lists are atomic)"
const declare = (reason: string, names: string[]): Record<string, string> => Object.fromEntries(names.map((n) => [n, reason]))
const MERGE_DEVIATIONS: Record<string, string> = {}
const SYMDIFF_DEVIATIONS: Record<string, string> = declare(SEPARABLE, [
  'untyped separable-valid-4', 'untyped separable-valid-5', 'untyped separable-valid-6', 'untyped separable-valid-7',
  'untyped separable-valid-10', 'untyped separable-valid-11', 'untyped separable-valid-14', 'untyped separable-valid-15',
])

t.test('typed/merge_test.go TestMerge', async (t) => {
  const cases: UpstreamCase[] = []
  for (const tc of fixture.merge) {
    const topology = topologies(tc.schema)(tc.root)
    for (const [i, r] of tc.triplets.entries()) {
      cases.push({
        name: `${tc.name}-valid-${i}`,
        check() {
          const got = mergeObjects(structuredClone(obj(r.lhs)), structuredClone(obj(r.rhs)), topology, 'x')
          return deepEqual(got, obj(r.out)) ? undefined : `got ${JSON.stringify(got)}, want ${JSON.stringify(r.out)}`
        },
      })
    }
  }
  runUpstreamTable(t, 'structured-merge-diff typed/merge_test.go', cases, MERGE_DEVIATIONS)
})

t.test('typed/symdiff_test.go TestSymdiff', async (t) => {
  const cases: UpstreamCase[] = []
  for (const tc of fixture.symdiff) {
    const topology = topologies(tc.schema)(tc.root)
    for (const [i, q] of tc.quints.entries()) {
      cases.push({
        name: `${tc.name}-valid-${i}`,
        check() {
          const got = compareObjects(obj(q.lhs), obj(q.rhs), topology)
          const want = { added: fromPaths(q.added), modified: fromPaths(q.modified), removed: fromPaths(q.removed) }
          const problems: string[] = []
          for (const k of ['added', 'modified', 'removed'] as const) if (!equals(got[k], want[k])) problems.push(`${k} ${JSON.stringify(toFieldsV1(got[k]))}, want ${JSON.stringify(toFieldsV1(want[k]))}`)
          const back = compareObjects(obj(q.rhs), obj(q.lhs), topology)
          if (!equals(back.modified, got.modified) || !equals(back.removed, got.added) || !equals(back.added, got.removed)) problems.push('the reverse comparison is not the mirror image')
          return problems.length === 0 ? undefined : problems.join('; ')
        },
      })
    }
  }
  runUpstreamTable(t, 'structured-merge-diff typed/symdiff_test.go', cases, SYMDIFF_DEVIATIONS)
})
