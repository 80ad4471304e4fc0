/**
 * CustomResourceDefinitions: what apiextensions-apiserver does with one — validation of the CRD
 * itself, its defaults, its status conditions once its names are accepted, and the resource types
 * it serves (schema validation and x-kubernetes-validations rules, defaulting and pruning of its custom resources, printer columns,
 * status and scale subresources).
 */
import type { FieldCause, Json, JsonObject, KubeObject, PrinterColumn, ResourceType, ScaleSubresource } from './types.ts'
import { topologyFromOpenAPI } from './apply/crd-topology.ts'
import {
  applyDefaults, dropNulls, forbidden, invalid, notSupported, pruneObject, required, validateObject, duplicate, validateDNSSubdomain,
  type Schema,
} from './crd/schema.ts'
import { ruleCauses, ruleDeclarationCauses } from './crd/cel.ts'

interface CRDNames {
  plural?: string
  singular?: string
  kind?: string
  listKind?: string
  shortNames?: string[]
  categories?: string[]
}

interface CRDVersion {
  name?: string
  served?: boolean
  storage?: boolean
  deprecated?: boolean
  schema?: { openAPIV3Schema?: Schema }
  subresources?: { status?: JsonObject; scale?: { specReplicasPath?: string; statusReplicasPath?: string; labelSelectorPath?: string } }
  additionalPrinterColumns?: { name?: string; type?: string; format?: string; description?: string; priority?: number; jsonPath?: string }[]
}

interface CRDSpec {
  group?: string
  names?: CRDNames
  scope?: string
  versions?: CRDVersion[]
}

function specOf(crd: KubeObject): CRDSpec {
  const spec = crd['spec']
  return typeof spec === 'object' && spec !== null ? (spec as CRDSpec) : {}
}

/** The default `Age` column a CRD version gets when it declares none (serveDefaultColumnsIfEmpty). */
const defaultColumns: PrinterColumn[] = [
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata' },
]

/**
 * The resource types a CRD serves: one per served version, with the version's schema hooks
 * (prune → drop non-nullable nulls → defaults → validate), printer columns (the default `Age`
 * when none are declared), and status/scale subresources.
 */
export function resourceTypesFromCRD(crd: KubeObject): ResourceType[] {
  const spec = specOf(crd)
  const names = spec.names ?? {}
  const kind = names.kind ?? ''
  const out: ResourceType[] = []
  for (const v of spec.versions ?? []) {
    if (!v.served || !v.name) continue
    const schema = v.schema?.openAPIV3Schema ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }
    const type: ResourceType = {
      group: spec.group ?? '',
      version: v.name,
      resource: names.plural ?? '',
      singular: names.singular ?? kind.toLowerCase(),
      kind,
      listKind: names.listKind ?? `${kind}List`,
      namespaced: spec.scope !== 'Cluster',
      // The order a real apiserver lists a custom resource's verbs in.
      verbs: ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'],
      subresources: {},
      topology: topologyFromOpenAPI(schema),
      custom: true,
      generation: 'all-but-metadata',
      prune: (obj) => pruneObject(obj as unknown as JsonObject, schema),
      default: (obj) => {
        dropNulls(obj, schema)
        applyDefaults(obj, schema)
      },
      validate: (obj, old) => {
        const causes = validateObject(obj as unknown as JsonObject, schema)
        return [...causes, ...ruleCauses(schema, obj as unknown as JsonObject, old as unknown as JsonObject | undefined, causes)]
      },
      printerColumns: printerColumnsOf(v),
    }
    if (v.schema?.openAPIV3Schema) type.openAPIV3Schema = v.schema.openAPIV3Schema as Record<string, unknown>
    if (names.shortNames && names.shortNames.length > 0) type.shortNames = [...names.shortNames]
    if (names.categories && names.categories.length > 0) type.categories = [...names.categories]
    if (v.subresources?.status) type.subresources.status = true
    const sc = v.subresources?.scale
    if (sc?.specReplicasPath && sc.statusReplicasPath) {
      const scale: ScaleSubresource = { specReplicasPath: sc.specReplicasPath, statusReplicasPath: sc.statusReplicasPath }
      if (sc.labelSelectorPath) scale.labelSelectorPath = sc.labelSelectorPath
      type.subresources.scale = scale
    }
    out.push(type)
  }
  return out
}

function printerColumnsOf(v: CRDVersion): PrinterColumn[] {
  const cols = v.additionalPrinterColumns ?? []
  if (cols.length === 0) return defaultColumns.map((c) => ({ ...c }))
  return cols.map((c) => {
    const col: PrinterColumn = { name: c.name ?? '', type: c.type ?? 'string', jsonPath: c.jsonPath ?? '' }
    if (c.format) col.format = c.format
    if (c.description) col.description = c.description
    if (c.priority) col.priority = c.priority
    return col
  })
}

function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')
}

interface Condition {
  type: string
  status: string
  lastTransitionTime: string
  reason: string
  message: string
}

/**
 * The CRD's status once the server has looked at its names: `NamesAccepted` (reason NoConflicts,
 * or the conflict) and `Established` (reason InitialNamesAccepted), `acceptedNames`, and
 * `storedVersions` (every version ever the storage version). Transition times are kept when a
 * condition's status does not change.
 */
export function crdStatus(crd: KubeObject, nameConflicts: string[]): JsonObject {
  const spec = specOf(crd)
  const names = spec.names ?? {}
  const old = (typeof crd['status'] === 'object' && crd['status'] !== null ? crd['status'] : {}) as JsonObject
  const oldConds = (Array.isArray(old['conditions']) ? old['conditions'] : []) as unknown as Condition[]
  const time = now()
  const cond = (type: string, status: string, reason: string, message: string): Condition => {
    const prev = oldConds.find((c) => c.type === type)
    return { type, status, lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : time, reason, message }
  }
  const accepted = nameConflicts.length === 0
  const wasEstablished = oldConds.some((c) => c.type === 'Established' && c.status === 'True')
  const plural = names.plural ?? ''
  const conflictReason = nameConflicts.some((m) => m.startsWith(`"${plural}"`)) ? 'PluralConflict' : 'KindConflict'
  const conditions = [
    accepted ? cond('NamesAccepted', 'True', 'NoConflicts', 'no conflicts found') : cond('NamesAccepted', 'False', conflictReason, nameConflicts.join(', ')),
    accepted || wasEstablished
      ? cond('Established', 'True', 'InitialNamesAccepted', 'the initial names have been accepted')
      : cond('Established', 'False', 'NotAccepted', 'not all names are accepted'),
  ]
  let acceptedNames: JsonObject
  if (accepted) {
    acceptedNames = { plural, singular: names.singular ?? (names.kind ?? '').toLowerCase() }
    if (names.shortNames && names.shortNames.length > 0) acceptedNames['shortNames'] = [...names.shortNames]
    acceptedNames['kind'] = names.kind ?? ''
    acceptedNames['listKind'] = names.listKind ?? `${names.kind ?? ''}List`
    if (names.categories && names.categories.length > 0) acceptedNames['categories'] = [...names.categories]
  } else {
    acceptedNames = (typeof old['acceptedNames'] === 'object' && old['acceptedNames'] !== null ? old['acceptedNames'] : { plural: '', kind: '' }) as JsonObject
  }
  const stored = Array.isArray(old['storedVersions']) ? (old['storedVersions'] as string[]).slice() : []
  const storage = (spec.versions ?? []).find((v) => v.storage)?.name
  if (storage && !stored.includes(storage)) stored.push(storage)
  return { conditions: conditions as unknown as Json, acceptedNames, storedVersions: stored }
}

/** Server-side defaults of a CRD (apiextensions v1 SetDefaults): singular, listKind, conversion strategy. */
export function defaultCRD(crd: KubeObject): void {
  const spec = crd['spec']
  if (typeof spec !== 'object' || spec === null) return
  const s = spec as CRDSpec & { conversion?: { strategy?: string } }
  if (s.names && s.names.kind) {
    s.names.singular ??= s.names.kind.toLowerCase()
    s.names.listKind ??= `${s.names.kind}List`
  }
  s.conversion ??= { strategy: 'None' }
}

const dns1035Label = /^[a-z]([-a-z0-9]*[a-z0-9])?$/

/**
 * Validation of a CRD strong enough to refuse one the server could not serve: name = plural.group,
 * names, scope, versions (unique names, exactly one storage version, a structural schema for each),
 * printer columns and subresource paths. Messages follow apiextensions' validation where it matters.
 */
export function validateCRD(crd: KubeObject): FieldCause[] {
  const out: FieldCause[] = []
  const spec = specOf(crd)
  const names = spec.names ?? {}
  const group = spec.group ?? ''
  if (!group) out.push(required('spec.group'))
  else {
    out.push(...validateDNSSubdomain('spec.group', group))
    if (!group.includes('.')) out.push(invalid('spec.group', group, 'should be a domain with at least one dot'))
  }
  if (!names.plural) out.push(required('spec.names.plural'))
  else if (!dns1035Label.test(names.plural)) out.push(invalid('spec.names.plural', names.plural, 'a lowercase RFC 1035 label must consist of lower case alphanumeric characters or \'-\', start with an alphabetic character, and end with an alphanumeric character'))
  if (!names.kind) out.push(required('spec.names.kind'))
  if (names.singular && !dns1035Label.test(names.singular)) out.push(invalid('spec.names.singular', names.singular, 'a lowercase RFC 1035 label must consist of lower case alphanumeric characters or \'-\', start with an alphabetic character, and end with an alphanumeric character'))
  if (names.kind && names.listKind === names.kind) out.push(invalid('spec.names.listKind', names.listKind, 'kind and listKind may not be the same'))
  const expected = `${names.plural ?? ''}.${group}`
  if (crd.metadata.name !== expected) out.push(invalid('metadata.name', crd.metadata.name ?? '', 'must be spec.names.plural+"."+spec.group'))
  if (!spec.scope) out.push(required('spec.scope'))
  else if (spec.scope !== 'Cluster' && spec.scope !== 'Namespaced') out.push(notSupported('spec.scope', spec.scope, ['Cluster', 'Namespaced']))
  const versions = spec.versions ?? []
  if (versions.length === 0) out.push(invalid('spec.versions', [], 'must have exactly one version marked as storage version'))
  else if (versions.filter((v) => v.storage).length !== 1) out.push(invalid('spec.versions', versions.map((v) => v.name ?? ''), 'must have exactly one version marked as storage version'))
  const seen = new Set<string>()
  versions.forEach((v, i) => {
    const p = `spec.versions[${i}]`
    if (!v.name) out.push(required(`${p}.name`))
    else if (!dns1035Label.test(v.name)) out.push(invalid(`${p}.name`, v.name, 'a DNS-1035 label must consist of lower case alphanumeric characters or \'-\', start with an alphabetic character, and end with an alphanumeric character'))
    else if (seen.has(v.name)) out.push(duplicate(`${p}.name`, v.name))
    else seen.add(v.name)
    const schema = v.schema?.openAPIV3Schema
    if (!schema) out.push(required(`${p}.schema.openAPIV3Schema`, 'schemas are required'))
    else out.push(...structuralErrors(schema, `${p}.schema.openAPIV3Schema`, true), ...ruleDeclarationCauses(schema, `${p}.schema.openAPIV3Schema`))
    ;(v.additionalPrinterColumns ?? []).forEach((c, j) => {
      const cp = `${p}.additionalPrinterColumns[${j}]`
      if (!c.name) out.push(required(`${cp}.name`))
      if (!c.type) out.push(required(`${cp}.type`))
      else if (!['integer', 'number', 'string', 'boolean', 'date'].includes(c.type)) {
        out.push(notSupported(`${cp}.type`, c.type, ['integer', 'number', 'string', 'boolean', 'date']))
      }
      if (!c.jsonPath) out.push(required(`${cp}.jsonPath`))
    })
    const sc = v.subresources?.scale
    if (sc) {
      const sp = `${p}.subresources.scale`
      if (!sc.specReplicasPath) out.push(required(`${sp}.specReplicasPath`))
      else if (!sc.specReplicasPath.startsWith('.spec.')) out.push(invalid(`${sp}.specReplicasPath`, sc.specReplicasPath, 'should be a json path under .spec'))
      if (!sc.statusReplicasPath) out.push(required(`${sp}.statusReplicasPath`))
      else if (!sc.statusReplicasPath.startsWith('.status.')) out.push(invalid(`${sp}.statusReplicasPath`, sc.statusReplicasPath, 'should be a json path under .status'))
      if (sc.labelSelectorPath && !sc.labelSelectorPath.startsWith('.spec.') && !sc.labelSelectorPath.startsWith('.status.')) {
        out.push(invalid(`${sp}.labelSelectorPath`, sc.labelSelectorPath, 'should be a json path under either .spec or .status'))
      }
    }
  })
  return out
}

const knownTypes = ['array', 'boolean', 'integer', 'number', 'object', 'string']

/** Structural-schema rules: a type everywhere it is not implied, items for arrays, no properties beside additionalProperties. */
function structuralErrors(s: Schema, path: string, root: boolean): FieldCause[] {
  const out: FieldCause[] = []
  const unknownOk = s['x-kubernetes-int-or-string'] || s['x-kubernetes-preserve-unknown-fields']
  if (!s.type) {
    if (root) out.push(required(`${path}.type`, 'must not be empty at the root'))
    else if (!unknownOk) out.push(required(`${path}.type`, 'must not be empty for specified object fields'))
  } else if (!knownTypes.includes(s.type)) {
    out.push(notSupported(`${path}.type`, s.type, knownTypes))
  }
  if (root && s.type && s.type !== 'object') out.push(invalid(`${path}.type`, s.type, 'must be object at the root'))
  if (s.properties && s.additionalProperties !== undefined && s.additionalProperties !== false) {
    out.push(forbidden(`${path}.additionalProperties`, 'additionalProperties and properties are mutual exclusive'))
  }
  if (s.type === 'array' && !s.items) out.push(required(`${path}.items`, 'must be specified'))
  if (s['x-kubernetes-list-type'] === 'map' && !(s['x-kubernetes-list-map-keys'] ?? []).length) {
    out.push(required(`${path}.x-kubernetes-list-map-keys`, 'must not be empty if x-kubernetes-list-type is map'))
  }
  if (s['x-kubernetes-list-map-keys'] && s['x-kubernetes-list-type'] !== 'map') {
    out.push(forbidden(`${path}.x-kubernetes-list-map-keys`, 'must not be set if x-kubernetes-list-type is not map'))
  }
  if (s.pattern !== undefined) {
    try {
      new RegExp(s.pattern, 'u')
    } catch {
      out.push(invalid(`${path}.pattern`, s.pattern, 'must be a valid regular expression'))
    }
  }
  for (const [k, v] of Object.entries(s.properties ?? {})) {
    if (root && k === 'metadata') {
      const extra = Object.keys(v.properties ?? {}).filter((f) => f !== 'name' && f !== 'generateName')
      if (extra.length > 0 || (v.type && v.type !== 'object')) {
        out.push(forbidden(`${path}.properties[metadata]`, 'must not specify anything other than name and generateName, but metadata is implicitly specified'))
      }
      continue
    }
    out.push(...structuralErrors(v, `${path}.properties[${k}]`, false))
  }
  if (s.items) out.push(...structuralErrors(s.items, `${path}.items`, false))
  if (typeof s.additionalProperties === 'object') out.push(...structuralErrors(s.additionalProperties, `${path}.additionalProperties`, false))
  return out
}
