/**
 * structured-merge-diff's own merge test tables, run against the sandbox's apply engine.
 *
 * Source: https://github.com/kubernetes-sigs/structured-merge-diff, `merge/*_test.go` at tag
 * v6.3.0 (commit d3e4dc6f630e155d2fbfdac465eb0da8a737245f), the version Kubernetes 1.34 vendors.
 * The cases (every `map[string]TestCase` entry) are transcribed into
 * `test/fixtures/smd-merge-tables.json` by `node test/support/smd-transcribe.ts <smd repository>`;
 * each keeps its upstream id `<file>:<test function>/<case name>`.
 *
 * A case runs as upstream's `internal/fixture` runs it: `Update` replaces the object and tracks
 * ownership (here `trackUpdate`), `Apply`/`ForceApply` apply (here `serverSideApply`),
 * `ExtractApply` extracts what the manager owns, merges the object on top and force-applies the
 * result (client-go's Extract* then an apply), `ChangeParser` changes the schema; expected
 * conflicts must be exactly those reported, and at the end the object must compare equal and every
 * manager own exactly the expected set at the expected apiVersion. Schemas in SMD's schema language
 * become sandbox topologies. Cases the sandbox cannot or does not run the same way are listed in
 * DEVIATIONS with the reason; the test checks that each of them does deviate, so the list (and the
 * counts in operator/sandbox/README.md) stays exact.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { compareObjects, fromFieldsV1, mergeObjects, METADATA, pathString, serverSideApply, trackUpdate } from '../operator/sandbox/apply/index.ts'
import { equals, type FieldSet, fromPaths, isEmpty, toFieldsV1 } from '../operator/sandbox/apply/fieldset.ts'
import { ANY, itemElement } from '../operator/sandbox/apply/walk.ts'
import { type SchemaType, topologies } from './support/smd-schema.ts'
import type { Json, JsonObject, KubeObject, Topology } from '../operator/sandbox/types.ts'

interface Op {
  op: string
  manager?: string
  apiVersion?: string
  object?: Json
  conflicts?: { manager: string; path: string[] }[]
  parser?: string
}

interface Case {
  id: string
  parser: string
  converter?: string
  expectError?: boolean
  untranscribed?: string
  ops: Op[]
  object?: Json
  apiVersion?: string
  managed?: Record<string, { apiVersion: string; applied: boolean; set: string[][] }>
  ignoredFields?: Record<string, string[][]>
  ignoreFilter?: Record<string, { filter: string; set: string[][] }>
  returnInputOnNoop?: boolean
}

interface ParserDef {
  schema: { types: SchemaType[] }
  root?: string
}

interface Fixture {
  source: { repository: string; tag: string; commit: string }
  parsers: Record<string, ParserDef | 'deduced'>
  cases: Case[]
}

const fixture = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'smd-merge-tables.json'), 'utf8')) as Fixture

/**
 * Cases that do not pass here, by upstream id, with the reason. Grouped by cause; the README
 * repeats the groups with their counts.
 */
const DEVIATIONS: Record<string, string> = {}
function declare(reason: string, ids: string[]): void {
  for (const id of ids) DEVIATIONS[id] = reason
}
const ids = (prefix: string, names: string[]): string[] => names.map((n) => `merge/${prefix}/${n}`)

declare('conversion between apiVersions is not modelled (the case runs with a converter that renames fields); every kind served here has one version, or CRD versions with the `None` strategy, whose conversion changes nothing a comparison sees', [
  ...ids('multiple_appliers_test.go:TestMultipleAppliersRealConversion', ['multiple_appliers_recursive_map_real_conversion', 'appliers_remove_from_controller_real_conversion', 'applier_updater_shared_ownership_real_conversion']),
  ...ids('multiple_appliers_test.go:TestMultipleAppliersReliantFieldsConversions', ['multiple_versions_with_reliant_fields']),
  ...ids('ignore_test.go:TestFilteredFieldsUsesVersions', ['does_use_ignored_fields_versions', 'update_does_not_steal_ignored', 'apply_does_not_steal_ignored']),
  ...ids('multiple_appliers_test.go:testMultipleAppliersFieldUnsetting', ['unset_scalar_sole_owner', 'unset_scalar_shared_with_applier', 'unset_scalar_shared_with_updater', 'updater_claims_field', 'unset_complex_sole_owner', 'unset_complex_shared_with_applier']),
  ...ids('multiple_appliers_test.go:testMultipleAppliersFieldRenameConversions', ['updater_claims_field']),
])

/** The object's topology plus the metadata the sandbox keeps managedFields in (never owned). */
function withMetadata(root: Topology): Topology {
  if (root.type === 'struct' && !root.atomic) return { ...root, fields: { ...root.fields, metadata: METADATA } }
  return { type: 'struct', fields: { metadata: METADATA }, preserveUnknown: true }
}

const topologyCache = new Map<string, Topology>()
function topologyOf(parser: string, apiVersion: string): Topology {
  const key = `${parser}\u0000${apiVersion}`
  const hit = topologyCache.get(key)
  if (hit !== undefined) return hit
  const def = fixture.parsers[parser]
  if (def === undefined) throw new Unsupported(`parser ${parser} not transcribed`)
  let root: Topology
  if (def === 'deduced') root = ANY
  else {
    const name = def.root ?? apiVersion
    if (!def.schema.types.some((x) => x.name === name)) throw new Unsupported(`no type ${name} in ${parser}`)
    root = topologies(def.schema)(name)
  }
  const t = withMetadata(root)
  topologyCache.set(key, t)
  return t
}

// ------------------------------------------------------------------ ExtractApply (client side)

function isObjectValue(v: Json | null | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** fieldpath.Set.Leaves: members that have no children. */
function leaves(s: FieldSet): FieldSet {
  if (s.children === null) return s
  const out = new Map<string, FieldSet>()
  for (const [pe, c] of s.children) {
    const l = c.children === null ? c : leaves({ member: false, children: c.children })
    if (!isEmpty(l)) out.set(pe, l)
  }
  return out.size === 0 ? fromPaths([]) : { member: false, children: out }
}

/**
 * typed/remove.go with shouldExtract at v6.3.0: keeps the members of `s` (whole) and what lies on
 * the way to them; a container left with nothing is null, as the walker's nil output is.
 */
function extractItems(v: Json, s: FieldSet, t: Topology): Json | null {
  if (Array.isArray(v)) {
    if (v.length === 0 || t.type !== 'list' || t.listType === 'atomic') return v.length === 0 ? null : v
    const out: Json[] = []
    for (const [i, item] of v.entries()) {
      const pe = itemElement(t, item, i)
      const c = s.children?.get(pe)
      if (c?.member) out.push(extractItems(item, s, t.items) as Json)
      if (c !== undefined && c.children !== null) out.push(extractItems(item, { member: false, children: c.children }, t.items) as Json)
    }
    return out.length > 0 ? out : null
  }
  if (isObjectValue(v)) {
    if (Object.keys(v).length === 0 || ((t.type === 'struct' || t.type === 'map') && t.atomic)) return Object.keys(v).length === 0 ? null : v
    const out: JsonObject = {}
    for (const [k, cv] of Object.entries(v)) {
      const c = s.children?.get('f:' + k)
      if (c === undefined) continue
      const ct = t.type === 'struct' ? (t.fields[k] ?? ANY) : t.type === 'map' ? t.values : ANY
      if (c.member) out[k] = extractItems(cv as Json, s, ct)
      else if (c.children !== null) out[k] = extractItems(cv as Json, { member: false, children: c.children }, ct)
    }
    return Object.keys(out).length > 0 ? out : null
  }
  return v
}

// ------------------------------------------------------------------ running a case

class Unsupported extends Error {}
class Mismatch extends Error {}

function body(o: KubeObject): JsonObject {
  const { metadata: _m, ...rest } = o as unknown as JsonObject
  return rest
}

function run(c: Case): void {
  if (c.untranscribed !== undefined) throw new Unsupported(c.untranscribed)
  if (c.converter !== undefined) throw new Unsupported(`converter ${c.converter}`)
  let resetFields: Record<string, string[][]> | undefined
  for (const [v, spec] of Object.entries(c.ignoredFields ?? {})) (resetFields ??= {})[v] = spec.map((p) => p.map((e) => e.slice(2)))
  for (const [v, spec] of Object.entries(c.ignoreFilter ?? {})) {
    if (spec.filter !== 'fieldpath.NewExcludeSetFilter') throw new Unsupported(`filter ${spec.filter}`)
    ;(resetFields ??= {})[v] = spec.set.map((p) => p.map((e) => e.slice(2)))
  }
  if (resetFields !== undefined && Object.values(resetFields).some((ps) => ps.some((p) => p.some((e) => e === '')))) throw new Unsupported('ignored path below a list item')
  let live: KubeObject | undefined
  let second = 0
  let parser = c.parser
  for (const [i, op] of c.ops.entries()) {
    if (op.op === 'ChangeParser') {
      // A schema change between writes (a CRD update does that to custom resources).
      parser = op.parser ?? ''
      continue
    }
    const apiVersion = op.apiVersion ?? ''
    const topology = topologyOf(parser, apiVersion)
    const now = new Date(Date.UTC(2026, 0, 1, 0, 0, second++)).toISOString().replace('.000Z', 'Z')
    const object = (op.object ?? {}) as JsonObject
    const reset = resetFields?.[apiVersion]
    if (op.op === 'Update') {
      const updated = { ...structuredClone(object), metadata: {} } as unknown as KubeObject
      live = trackUpdate(live, updated, { manager: op.manager ?? '', topology, now, apiVersion, ...(reset ? { resetFields: reset } : {}) })
    } else if (op.op === 'Apply' || op.op === 'ForceApply') {
      const config = structuredClone(object) as unknown as KubeObject
      const r = serverSideApply(live, config, { manager: op.manager ?? '', force: op.op === 'ForceApply', topology, now, apiVersion, ...(reset ? { resetFields: reset, ignoreOnly: true } : {}) })
      const expected = (op.conflicts ?? []).map((x) => `${x.manager} ${pathString(x.path)}`).sort()
      if (!r.ok) {
        const got = r.conflicts.map((x) => `${x.manager} ${x.field}`).sort()
        if (op.conflicts === undefined) throw new Mismatch(`op ${i}: unexpected conflicts: ${got.join(', ')}`)
        if (got.join('\n') !== expected.join('\n')) throw new Mismatch(`op ${i}: conflicts ${got.join(', ')}, expected ${expected.join(', ')}`)
        continue
      }
      if (expected.length > 0) throw new Mismatch(`op ${i}: expected conflicts ${expected.join(', ')}, got none`)
      if (r.changed) live = r.object
    } else if (op.op === 'ExtractApply') {
      // internal/fixture ExtractApplyObject: what this manager owns is extracted from the live
      // object (leaves only), the object is merged on top, and the result force-applied.
      let config = object
      if (live !== undefined) {
        const mine = (live.metadata.managedFields ?? []).filter((e) => e.manager === op.manager)
        if (mine.length > 1) throw new Mismatch(`op ${i}: manager ${op.manager} has several entries`)
        const entry = mine[0]
        if (entry !== undefined && entry.apiVersion !== apiVersion) throw new Mismatch(`op ${i}: cannot extract ${entry.apiVersion} as ${apiVersion}`)
        const extracted = entry === undefined ? null : extractItems(body(live), leaves(fromFieldsV1(entry.fieldsV1)), topology)
        config = mergeObjects(isObjectValue(extracted) ? extracted : {}, object, topology, 'x')
      }
      const r = serverSideApply(live, structuredClone(config) as unknown as KubeObject, { manager: op.manager ?? '', force: true, topology, now, apiVersion, ...(reset ? { resetFields: reset, ignoreOnly: true } : {}) })
      if (!r.ok) throw new Mismatch(`op ${i}: forced apply failed`)
      if (r.changed) live = r.object
    } else throw new Unsupported(`operation ${op.op}`)
  }
  if (c.object !== undefined) {
    const want = (c.object ?? {}) as JsonObject
    const got = live === undefined ? {} : body(live)
    const cmp = compareObjects(got, want, topologyOf(parser, c.apiVersion ?? ''))
    if (!isEmpty(cmp.added) || !isEmpty(cmp.modified) || !isEmpty(cmp.removed))
      throw new Mismatch(`object ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`)
  }
  if (c.managed !== undefined) {
    const got = new Map<string, { apiVersion: string; set: ReturnType<typeof fromFieldsV1> }>()
    for (const e of live?.metadata.managedFields ?? []) {
      if (got.has(e.manager)) throw new Mismatch(`manager ${e.manager} has several entries (operation or apiVersion differ)`)
      got.set(e.manager, { apiVersion: e.apiVersion, set: fromFieldsV1(e.fieldsV1) })
    }
    const names = new Set([...got.keys(), ...Object.keys(c.managed)])
    for (const m of names) {
      const want = c.managed[m]
      const have = got.get(m)
      const wantSet = fromPaths(want?.set ?? [])
      if (have === undefined || want === undefined) {
        if (isEmpty(wantSet) && have === undefined) continue
        throw new Mismatch(`manager ${m}: ${have === undefined ? 'missing' : `unexpected ${JSON.stringify(toFieldsV1(have.set))}`}`)
      }
      if (have.apiVersion !== want.apiVersion) throw new Mismatch(`manager ${m}: apiVersion ${have.apiVersion}, expected ${want.apiVersion}`)
      if (!equals(have.set, wantSet)) throw new Mismatch(`manager ${m}: owns ${JSON.stringify(toFieldsV1(have.set))}, expected ${JSON.stringify(toFieldsV1(wantSet))}`)
    }
  }
}

type Outcome = { pass: true } | { pass: false; why: string }

function outcome(c: Case): Outcome {
  try {
    run(c)
    return c.expectError ? { pass: false, why: 'expected an error, none raised' } : { pass: true }
  } catch (e) {
    if (c.expectError && !(e instanceof Unsupported) && !(e instanceof Mismatch)) return { pass: true }
    return { pass: false, why: e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e) }
  }
}

const results = fixture.cases.map((c) => ({ c, o: outcome(c) }))

t.test(`structured-merge-diff ${fixture.source.tag} merge tables (${fixture.source.commit})`, async (t) => {
  for (const { c, o } of results) {
    const declared = DEVIATIONS[c.id]
    if (declared === undefined) t.ok(o.pass, c.id, o.pass ? {} : { why: o.why })
    else t.notOk(o.pass, `${c.id} deviates: ${declared}`, o.pass ? {} : { why: o.why })
  }
})

t.test('every declared deviation names a transcribed case', async (t) => {
  const ids = new Set(fixture.cases.map((c) => c.id))
  for (const id of Object.keys(DEVIATIONS)) t.ok(ids.has(id), id)
})

t.test('counts (operator/sandbox/README.md repeats them)', async (t) => {
  const passed = results.filter((r) => r.o.pass).length
  const byReason = new Map<string, number>()
  for (const r of Object.values(DEVIATIONS)) byReason.set(r, (byReason.get(r) ?? 0) + 1)
  t.same({ total: results.length, passed, deviations: Object.keys(DEVIATIONS).length }, { total: 128, passed: 114, deviations: 14 })
  t.same([...byReason.values()], [14], 'by reason: conversion')
  if (process.env.SMD_TABLES_REPORT) for (const { c, o } of results) if (!o.pass) process.stderr.write(`${c.id}\n    ${o.why}\n`)
})
