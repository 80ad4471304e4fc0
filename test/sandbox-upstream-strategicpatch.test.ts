/**
 * apimachinery's strategic merge patch cases, transcribed into
 * test/fixtures/upstream/strategicpatch.json from kubernetes/apimachinery
 * pkg/util/strategicpatch/patch_test.go at v0.34.10 (57ea95fcdaa372b20bbb922fa22a8dbd2f4b87db):
 * the YAML cases of customStrategicMergePatchTestCaseData, customStrategicMergePatchRawTestCases,
 * createStrategicMergePatchTestCaseData, strategicMergePatchRawTestCases and
 * replaceRawExtensionPatchTestCases, on upstream's MergeItem type.
 *
 * What a server does with them is apply: each case's two-way patch is applied to `original` and
 * must give `twoWayResult` (else `modified`), and its three-way patch applied to `current` must
 * give `result`, as upstream's testPatchApplication checks (the struct-schema tables are first
 * passed through sortMergeListsByName, ported below, as upstream does). Creating patches
 * (CreateTwoWayMergePatch, CreateThreeWayMergePatch) is kubectl's side and is not part of the
 * sandbox.
 */
import { readFileSync } from 'node:fs'
import t from 'tap'
import { applyStrategicPatch } from '../operator/kube/strategic-merge.ts'
import { topologyPatchMeta } from '../operator/sandbox/apply/patch-meta.ts'
import { childTopology } from '../operator/sandbox/apply/walk.ts'
import type { Json, JsonObject, Topology } from '../operator/sandbox/types.ts'
import { runUpstreamTable, type UpstreamCase } from './support/upstream-table.ts'

interface PatchCase {
  description: string
  original?: JsonObject
  twoWay?: JsonObject
  modified?: JsonObject
  current?: JsonObject
  threeWay?: JsonObject
  result?: JsonObject
  twoWayResult?: JsonObject
  expectedError?: string
}

const fixture = JSON.parse(readFileSync(new URL('./fixtures/upstream/strategicpatch.json', import.meta.url), 'utf8')) as Record<string, PatchCase[]>

// MergeItem and RetainKeysMergeItem (patch_test.go) as the sandbox's patch metadata: a
// `patchStrategy: merge` list of maps is a list-map keyed by its patchMergeKey, of scalars a set;
// lists without a strategy are atomic.
const scalar: Topology = { type: 'scalar' }
const mergeItem: Topology & { type: 'struct' } = { type: 'struct', fields: {} }
const retainKeysMergeItem: Topology & { type: 'struct' } = { type: 'struct', fields: {} }
const mergingList: Topology = { type: 'list', listType: 'map', keys: ['name'], items: mergeItem }
Object.assign(mergeItem.fields, {
  name: scalar,
  value: scalar,
  other: scalar,
  mergingList,
  nonMergingList: { type: 'list', listType: 'atomic', items: mergeItem },
  mergingIntList: { type: 'list', listType: 'set', items: scalar },
  nonMergingIntList: { type: 'list', listType: 'atomic', items: scalar },
  // A *MergeItem with `patchStrategy: merge`, used in the cases as a list keyed by name.
  mergeItemPtr: mergingList,
  simpleMap: { type: 'map', values: scalar },
  // runtime.RawExtension with `patchStrategy: replace`: the apply topology has no such strategy.
  replacingItem: { type: 'any' },
  retainKeysMap: retainKeysMergeItem,
  retainKeysMergingList: mergingList,
})
Object.assign(retainKeysMergeItem.fields, {
  name: scalar,
  value: scalar,
  other: scalar,
  simpleMap: { type: 'map', values: scalar },
  mergingIntList: { type: 'list', listType: 'set', items: scalar },
  mergingList,
  nonMergingList: { type: 'list', listType: 'atomic', items: mergeItem },
})

/** Go's `%v` of a scalar, which upstream's sorts compare as strings. */
const goV = (v: Json | undefined): string => (v === null || v === undefined ? '<nil>' : String(v))
const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** patch.go sortMergeListsByNameMap (test helper) on the topology above. */
function sortMap(s: JsonObject, t: Topology): JsonObject {
  const out: JsonObject = {}
  for (const [k, v] of Object.entries(s)) {
    let x = v as Json
    if (k === '$retainKeys' || k.startsWith('$deleteFromPrimitiveList')) x = sortScalars(x as Json[])
    else if (!k.startsWith('$setElementOrder') && k !== '$patch') {
      const c = childTopology(t, k)
      if (x !== null && typeof x === 'object' && !Array.isArray(x)) x = sortMap(x, c)
      else if (Array.isArray(x) && c.type === 'list' && c.listType !== 'atomic') x = sortArray(x, c.items, c.listType === 'map' ? (c.keys?.[0] ?? '') : '')
    }
    out[k] = x
  }
  return out
}

function sortScalars(s: Json[]): Json[] {
  return [...s].sort((a, b) => byString(goV(a), goV(b)))
}

function sortArray(s: Json[], items: Topology, mergeKey: string): Json[] {
  if (s.length === 0) return s
  const first = s[0]
  if (first === null || typeof first !== 'object' || Array.isArray(first)) return sortScalars([...new Set(s)])
  const maps = s.map((e) => sortMap(e as JsonObject, items))
  return maps.sort((a, b) => byString(goV(a[mergeKey]), goV(b[mergeKey])))
}

/** json.Marshal's bytes: map keys sorted, list order kept. */
function canon(v: Json | undefined): string {
  return JSON.stringify(v ?? null, (_k, x: unknown) =>
    x !== null && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((k) => [k, (x as Record<string, unknown>)[k]]),
        )
      : x,
  )
}

function applies(original: JsonObject | undefined, patch: JsonObject | undefined, want: JsonObject, expectedError: string | undefined, sorted: boolean): string | undefined {
  const prep = (o: JsonObject | undefined): JsonObject => (sorted ? sortMap(o ?? {}, mergeItem) : structuredClone(o ?? {}))
  let got: JsonObject
  try {
    got = applyStrategicPatch(prep(original), prep(patch), topologyPatchMeta(mergeItem))
  } catch (e) {
    const message = (e as Error).message
    return expectedError !== undefined && message.includes(expectedError) ? undefined : `error: ${message}`
  }
  if (expectedError !== undefined) return `no error, want one containing ${JSON.stringify(expectedError)}`
  const a = canon(got)
  const b = canon(prep(want))
  return a === b ? undefined : `got ${a}\n     want ${b}`
}

const nonEmpty = (o: JsonObject | undefined): o is JsonObject => o !== undefined && Object.keys(o).length > 0

function table(name: string, sorted: boolean, threeWay: boolean, deviations: Record<string, string>): void {
  t.test(`patch_test.go ${name}`, async (t) => {
    const cases: UpstreamCase[] = []
    const rows = fixture[name]
    if (rows === undefined) throw new Error(`no fixture ${name}`)
    for (const [i, c] of rows.entries()) {
      cases.push({ name: `#${i} ${c.description} / TwoWay`, check: () => applies(c.original, c.twoWay, c.twoWayResult ?? c.modified ?? {}, c.expectedError, sorted) })
      if (threeWay && nonEmpty(c.result)) {
        const result = c.result
        cases.push({ name: `#${i} ${c.description} / ThreeWay`, check: () => applies(c.current, c.threeWay, result, c.expectedError, sorted) })
      }
    }
    runUpstreamTable(t, `strategicpatch/patch_test.go ${name}`, cases, deviations)
  })
}

const replaceStrategy = 'the sandbox takes patch metadata from the apply topology, which has no `patchStrategy: replace` (no built-in kind served here has a field with it), so replacingItem merges instead of being replaced'

table('customStrategicMergePatchTestCaseData', true, false, {})
table('customStrategicMergePatchRawTestCases', false, false, {})
table('createStrategicMergePatchTestCaseData', true, true, {})
table('strategicMergePatchRawTestCases', false, true, {})
table('replaceRawExtensionPatchTestCases', false, true, {
  '#0 replace RawExtension field, rest unchanched / TwoWay': replaceStrategy,
  '#0 replace RawExtension field, rest unchanched / ThreeWay': replaceStrategy,
  '#1 replace RawExtension field and merge list / TwoWay': replaceStrategy,
  '#1 replace RawExtension field and merge list / ThreeWay': replaceStrategy,
})
