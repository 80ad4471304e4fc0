/**
 * The CustomResourceDefinition of memcacheds.cache.example.com. Its spec schema is the chart's
 * values.schema.json (one source of truth); its status schema is what the operator writes.
 */
import type { Chart } from '../render/chart.ts'
import { isPlainMap } from '../render/values.ts'
import { OPERATOR_SPEC_FIELDS } from '../render/spec-fields.ts'
import { crdOf } from './crd-envelope.ts'
import { API_VERSION, KIND, PLURAL, SHORT_NAMES, SINGULAR } from './memcached.ts'

const STATUS_SCHEMA = {
  type: 'object',
  description: 'What the operator observed and did.',
  properties: {
    nodes: {
      type: 'array',
      description: 'Names of the memcached pods, sorted.',
      items: { type: 'string' },
      'x-kubernetes-list-type': 'atomic',
    },
    serverList: {
      type: 'array',
      description: 'The memcached servers as host:port, for clients: a StatefulSet\'s stable names <name>-<ordinal>.<service>.<namespace>.svc for every replica, ready or not; a Deployment\'s ready pods\' IPs, sorted.',
      items: { type: 'string' },
      'x-kubernetes-list-type': 'atomic',
    },
    servers: { type: 'integer', description: 'How many servers serverList holds.' },
    replicas: { type: 'integer', description: 'Pods of the current Deployment or StatefulSet.' },
    readyReplicas: { type: 'integer', description: 'Pods that are ready.' },
    selector: { type: 'string', description: 'Label selector of the pods, for the scale subresource.' },
    observedGeneration: { type: 'integer', format: 'int64', description: 'The generation the status describes.' },
    chartRevision: { type: 'string', description: 'The ChartRevision the instance was last rendered with (<chart>-<digest prefix>; docs/fleet.md).' },
    conditions: {
      type: 'array',
      description: 'Available, Progressing and Degraded.',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
      items: {
        type: 'object',
        required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
        properties: {
          type: { type: 'string', maxLength: 316, pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$' },
          status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
          reason: { type: 'string', maxLength: 1024, minLength: 1, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' },
          message: { type: 'string', maxLength: 32768 },
          lastTransitionTime: { type: 'string', format: 'date-time' },
          observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
        },
      },
    },
  },
}

/** The schema as a CRD takes it: render-only keywords (`x-memcached-operator-…`) dropped. */
export function crdSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(crdSchema)
  if (!isPlainMap(node)) return node
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(node)) {
    if (k.startsWith('x-memcached-operator-')) continue
    out[k] = k === 'properties' && isPlainMap(v) ? Object.fromEntries(Object.entries(v).map(([p, s]) => [p, crdSchema(s)])) : crdSchema(v)
  }
  return out
}

/** The spec's schema: the chart's values schema, with the operator's own fields (render/spec-fields.ts) beside its properties. */
export function specSchema(chart: Pick<Chart, 'schema'>): Record<string, unknown> {
  const schema = crdSchema(chart.schema) as Record<string, unknown>
  return { ...schema, properties: { ...(isPlainMap(schema.properties) ? schema.properties : {}), ...OPERATOR_SPEC_FIELDS } }
}

/** The CRD object `memcached-operator crd` prints. */
export function memcachedCRD(chart: Chart): Record<string, unknown> {
  return crdOf({ kind: KIND, plural: PLURAL, singular: SINGULAR, shortNames: SHORT_NAMES, categories: ['all'] }, 'Namespaced', {
    subresources: {
      status: {},
      scale: { specReplicasPath: '.spec.size', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
    },
    additionalPrinterColumns: [
      { name: 'Size', type: 'integer', jsonPath: '.spec.size', description: 'Desired number of memcached pods' },
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas', description: 'Pods that are ready' },
      { name: 'Servers', type: 'integer', jsonPath: '.status.servers', description: 'Servers listed in status.serverList for clients' },
      { name: 'Status', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason', description: 'Reconciled, or why the instance is not Ready (the Ready condition\'s reason)' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
    schema: {
      openAPIV3Schema: {
        type: 'object',
        description: `${KIND} runs memcached, rendered from the ${chart.name} chart (${API_VERSION}).`,
        properties: {
          apiVersion: { type: 'string' },
          kind: { type: 'string' },
          metadata: { type: 'object' },
          spec: specSchema(chart),
          status: STATUS_SCHEMA,
        },
        required: ['spec'],
      },
    },
  })
}

const CRD_KEYWORDS = new Set([
  'description', 'type', 'format', 'title', 'default', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum',
  'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'multipleOf', 'enum', 'maxProperties', 'minProperties',
  'required', 'items', 'allOf', 'oneOf', 'anyOf', 'not', 'properties', 'additionalProperties', 'externalDocs', 'example',
  'nullable', 'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-embedded-resource', 'x-kubernetes-int-or-string',
  'x-kubernetes-list-map-keys', 'x-kubernetes-list-type', 'x-kubernetes-map-type', 'x-kubernetes-validations', 'uniqueItems',
])
const JUNCTORS = ['allOf', 'anyOf', 'oneOf', 'not']
const FORBIDDEN_IN_JUNCTORS = ['type', 'description', 'default', 'additionalProperties', 'nullable']

/**
 * Where a schema leaves the structural subset a CRD accepts (apiextensions' structural schema
 * rules, condensed): every node typed unless int-or-string or preserve-unknown-fields, no `$ref`
 * or unknown keywords, `properties` and `additionalProperties` exclusive, no types in junctors.
 */
export function structuralProblems(node: unknown, path = 'spec', inJunctor = false): string[] {
  if (!isPlainMap(node)) return [`${path}: a schema must be a map`]
  const problems: string[] = []
  for (const key of Object.keys(node)) {
    if (!CRD_KEYWORDS.has(key) && !key.startsWith('x-memcached-operator-')) problems.push(`${path}: keyword ${JSON.stringify(key)} is not allowed in a CRD schema`)
  }
  if (node.uniqueItems === true) problems.push(`${path}: uniqueItems: true is not allowed (use x-kubernetes-list-type: set)`)
  const intOrString = node['x-kubernetes-int-or-string'] === true
  const preserve = node['x-kubernetes-preserve-unknown-fields'] === true
  if (inJunctor) {
    for (const k of FORBIDDEN_IN_JUNCTORS) if (node[k] !== undefined) problems.push(`${path}.${k}: must be empty inside allOf/anyOf/oneOf/not`)
  } else if (intOrString) {
    if (node.type !== undefined) problems.push(`${path}.type: must be empty with x-kubernetes-int-or-string`)
  } else if (typeof node.type !== 'string' || node.type === '') {
    if (!preserve) problems.push(`${path}.type: must not be empty (or set x-kubernetes-preserve-unknown-fields / x-kubernetes-int-or-string)`)
  }
  if (node.properties !== undefined && node.additionalProperties !== undefined) problems.push(`${path}: properties and additionalProperties are mutually exclusive`)
  if (isPlainMap(node.properties)) {
    for (const [name, child] of Object.entries(node.properties)) problems.push(...structuralProblems(child, `${path}.${name}`, inJunctor))
  }
  if (node.additionalProperties !== undefined && typeof node.additionalProperties !== 'boolean') {
    problems.push(...structuralProblems(node.additionalProperties, `${path}.additionalProperties`, inJunctor))
  }
  if (node.items !== undefined) {
    if (Array.isArray(node.items)) problems.push(`${path}.items: must be a single schema`)
    else problems.push(...structuralProblems(node.items, `${path}.items`, inJunctor))
  }
  for (const j of JUNCTORS) {
    const branches = node[j]
    if (branches === undefined) continue
    // The int-or-string pattern: anyOf [{type: integer}, {type: string}] is the one typed junctor allowed.
    if (intOrString && j === 'anyOf') continue
    for (const [i, b] of (Array.isArray(branches) ? branches : [branches]).entries()) problems.push(...structuralProblems(b, `${path}.${j}[${i}]`, true))
  }
  return problems
}
