/**
 * Apply topology of a custom resource from its CRD's `openAPIV3Schema`, the way the apiextensions
 * server builds it: `x-kubernetes-list-type` (atomic|set|map) with `x-kubernetes-list-map-keys`,
 * `x-kubernetes-map-type`, `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-int-or-string`.
 * Unmarked lists are atomic; maps and structs are granular.
 */
import type { Json, Topology } from '../types.ts'
import { isObject } from '../../kube/json.ts'
import { customResourceTopology } from './topology.ts'
import { ANY, SCALAR } from './walk.ts'

/** The topology of one schema node. */
export function schemaTopology(schema: unknown): Topology {
  if (!isObject(schema)) return ANY
  if (schema['x-kubernetes-int-or-string'] === true) return SCALAR
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true
  const type = schema.type
  if (type === 'array') {
    const items = schemaTopology(schema.items)
    const listType = schema['x-kubernetes-list-type']
    if (listType === 'set') return { type: 'list', items, listType: 'set' }
    if (listType === 'map') {
      const keys = Array.isArray(schema['x-kubernetes-list-map-keys'])
        ? (schema['x-kubernetes-list-map-keys'] as Json[]).filter((k): k is string => typeof k === 'string')
        : []
      const t: Topology = { type: 'list', items, listType: 'map', keys }
      const props = isObject(schema.items) && isObject(schema.items.properties) ? schema.items.properties : {}
      const defaults: Record<string, Json> = {}
      let any = false
      for (const k of keys) {
        const p = props[k]
        if (isObject(p) && p.default !== undefined) {
          defaults[k] = p.default
          any = true
        }
      }
      if (any) t.keyDefaults = defaults
      return t
    }
    return { type: 'list', items, listType: 'atomic' }
  }
  if (type === 'object' || isObject(schema.properties) || schema.additionalProperties !== undefined) {
    const atomic = schema['x-kubernetes-map-type'] === 'atomic'
    if (isObject(schema.properties)) {
      const fields: Record<string, Topology> = {}
      for (const [k, v] of Object.entries(schema.properties)) fields[k] = schemaTopology(v)
      const t: Topology = { type: 'struct', fields }
      if (atomic) t.atomic = true
      if (preserve) t.preserveUnknown = true
      return t
    }
    if (isObject(schema.additionalProperties)) {
      const t: Topology = { type: 'map', values: schemaTopology(schema.additionalProperties) }
      if (atomic) t.atomic = true
      return t
    }
    if (atomic) return { type: 'struct', fields: {}, atomic: true }
    return ANY
  }
  if (preserve || type === undefined) return ANY
  return SCALAR
}

/**
 * The topology of a whole custom resource from its version's `openAPIV3Schema`: the schema's
 * fields plus typed object metadata (labels, annotations, finalizers, ownerReferences).
 */
export function topologyFromOpenAPI(schema: unknown): Topology {
  return customResourceTopology(schemaTopology(schema))
}
