/**
 * apimachinery's strategic merge patch cases, transcribed into
 * test/fixtures/upstream/strategicpatch.json from kubernetes/apimachinery
 * pkg/util/strategicpatch/patch_test.go at v0.34.10 (57ea95fcdaa372b20bbb922fa22a8dbd2f4b87db):
 * the YAML cases of customStrategicMergePatchTestCaseData, customStrategicMergePatchRawTestCases,
 * createStrategicMergePatchTestCaseData, strategicMergePatchRawTestCases and
 * replaceRawExtensionPatchTestCases, on upstream's MergeItem type as its OpenAPI definition
 * (testdata/swagger-merge-item.json, in test/fixtures/upstream/) describes it.
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
import { patchMetaFromOpenAPI, type PatchMeta } from '../operator/sandbox/apply/patch-meta.ts'
import { applyStrategicPatch } from '../operator/kube/strategic-merge.ts'
import type { Json, JsonObject } from '../operator/sandbox/types.ts'
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

// upstream's own OpenAPI definition of MergeItem (testdata/swagger-merge-item.json), as
// TestStrategicMergePatch runs the tables with PatchMetaFromOpenAPI.
const swagger = JSON.parse(readFileSync(new URL('./fixtures/upstream/strategicpatch-swagger-merge-item.json', import.meta.url), 'utf8')) as { definitions: Record<string, Record<string, unknown>> }
const mergeItem = patchMetaFromOpenAPI(swagger.definitions, { $ref: '#/definitions/mergeItem' })

/** Go's `%v` of a scalar, which upstream's sorts compare as strings. */
const goV = (v: Json | undefined): string => (v === null || v === undefined ? '<nil>' : String(v))
const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** patch.go sortMergeListsByNameMap (test helper). */
function sortMap(s: JsonObject, t: PatchMeta): JsonObject {
  const out: JsonObject = {}
  for (const [k, v] of Object.entries(s)) {
    let x = v as Json
    if (k === '$retainKeys' || k.startsWith('$deleteFromPrimitiveList')) x = sortScalars(x as Json[])
    else if (!k.startsWith('$setElementOrder') && k !== '$patch') {
      if (x !== null && typeof x === 'object' && !Array.isArray(x)) x = sortMap(x, t.forStruct(k)[0])
      else if (Array.isArray(x)) {
        const [items, meta] = t.forSlice(k)
        if (meta.strategies.includes('merge')) x = sortArray(x, items, meta.mergeKey)
      }
    }
    out[k] = x
  }
  return out
}

function sortScalars(s: Json[]): Json[] {
  return [...s].sort((a, b) => byString(goV(a), goV(b)))
}

function sortArray(s: Json[], items: PatchMeta, mergeKey: string): Json[] {
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
    got = applyStrategicPatch(prep(original), prep(patch), mergeItem)
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

table('customStrategicMergePatchTestCaseData', true, false, {})
table('customStrategicMergePatchRawTestCases', false, false, {})
table('createStrategicMergePatchTestCaseData', true, true, {})
table('strategicMergePatchRawTestCases', false, true, {})
table('replaceRawExtensionPatchTestCases', false, true, {})

// TestUnknownField and TestNumberConversion hold their documents as JSON text, compared as bytes
// (json.Marshal: keys sorted): the patches they expect are applied here, parsed as the sandbox
// parses a request body. A case whose patch cannot be created (`diff`) has nothing to apply.
interface JsonTextCase {
  Original?: string
  Old?: string
  Current?: string
  ExpectedTwoWay?: string
  ExpectedTwoWayResult?: string
  ExpectedThreeWay?: string
  ExpectedThreeWayResult?: string
  ExpectedPatch?: string
  ExpectedResult?: string
}
const jsonText = JSON.parse(readFileSync(new URL('./fixtures/upstream/strategicpatch-json.json', import.meta.url), 'utf8')) as Record<string, Record<string, JsonTextCase>>
const precision = JSON.parse(readFileSync(new URL('./fixtures/upstream/strategicpatch-swagger-precision-item.json', import.meta.url), 'utf8')) as { definitions: Record<string, Record<string, unknown>> }
const precisionItem = patchMetaFromOpenAPI(precision.definitions, { $ref: '#/definitions/precisionItem' })

function appliesText(original: string, patch: string, want: string, meta: PatchMeta): string | undefined {
  const got = canon(applyStrategicPatch(JSON.parse(original) as JsonObject, JSON.parse(patch), meta))
  return got === want ? undefined : `got ${got}\n     want ${want}`
}

t.test('patch_test.go TestUnknownField', async (t) => {
  const cases: UpstreamCase[] = []
  for (const [name, c] of Object.entries(jsonText.TestUnknownField ?? {})) {
    if (c.ExpectedTwoWay === undefined) continue
    const { Original = '{}', Current = '{}', ExpectedTwoWay, ExpectedTwoWayResult = '', ExpectedThreeWay = '{}', ExpectedThreeWayResult = '' } = c
    cases.push({ name: `${name} / TwoWay`, check: () => appliesText(Original, ExpectedTwoWay, ExpectedTwoWayResult, mergeItem) })
    cases.push({ name: `${name} / ThreeWay`, check: () => appliesText(Current, ExpectedThreeWay, ExpectedThreeWayResult, mergeItem) })
  }
  runUpstreamTable(t, 'strategicpatch/patch_test.go TestUnknownField', cases, {})
})

t.test('patch_test.go TestNumberConversion', async (t) => {
  const cases: UpstreamCase[] = []
  for (const [name, c] of Object.entries(jsonText.TestNumberConversion ?? {})) {
    const { Old = '{}', ExpectedPatch = '{}', ExpectedResult = '' } = c
    cases.push({ name, check: () => appliesText(Old, ExpectedPatch, ExpectedResult, precisionItem) })
  }
  runUpstreamTable(t, 'strategicpatch/patch_test.go TestNumberConversion', cases, {
    'int64 max': 'a JSON number is a float64 in the sandbox (JavaScript), so an integer beyond 2^53 loses precision (9223372036854775807 becomes 9223372036854775808)',
  })
})
