/**
 * The bounds and the CRD schema of overlays (`spec.overlays` of a Memcached, and the platform's
 * overlays file of `run --overlays`): one place for the limits the operator checks and the schema
 * the API server checks first.
 */

/** At most this many overlays in a CR, and in the platform's file. */
export const MAX_OVERLAYS = 32
/** At most this many operations in one JSON patch. */
export const MAX_JSON_PATCH_OPS = 64
/** One overlay's JSON text at most this long (bytes of UTF-8). */
export const MAX_OVERLAY_BYTES = 32 * 1024
/** Maps and lists nested at most this deep in one overlay. */
export const MAX_OVERLAY_DEPTH = 24
/** Keys no overlay may hold anywhere: they reach a prototype in JavaScript. */
export const PROTOTYPE_KEYS: readonly string[] = ['__proto__', 'constructor', 'prototype']

const TARGET = {
  type: 'object',
  description: 'The rendered objects the patch applies to (every field given must match; kustomize\'s patch target). Optional for a strategic merge patch that names its object (apiVersion, kind, metadata.name).',
  properties: {
    group: { type: 'string', maxLength: 253, description: 'API group ("" for the core group, apps for a Deployment).' },
    version: { type: 'string', maxLength: 63, description: 'API version, e.g. v1.' },
    kind: { type: 'string', maxLength: 63, description: 'Kind, e.g. Deployment.' },
    name: { type: 'string', maxLength: 253, description: 'Object name, matched exactly.' },
    namespace: { type: 'string', maxLength: 63, description: 'Must be the Memcached\'s own namespace when given.' },
    labelSelector: { type: 'string', maxLength: 1024, description: 'A label selector the object\'s labels must match (app.kubernetes.io/component=cache).' },
  },
}

/** The schema of one overlay. */
export const OVERLAY_SCHEMA = {
  type: 'object',
  description: 'One patch: a strategic merge patch or an RFC 6902 JSON patch, and its target.',
  properties: {
    name: { type: 'string', maxLength: 63, description: 'Names the patch in messages, events and `render --show-overlays`.' },
    target: TARGET,
    strategicMerge: {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      description: 'A strategic merge patch, as kubectl patch --type strategic and kustomize apply it ($patch: delete, $setElementOrder, list merge keys of the Kubernetes schemas).',
    },
    jsonPatch: {
      type: 'array',
      maxItems: MAX_JSON_PATCH_OPS,
      'x-kubernetes-list-type': 'atomic',
      description: 'RFC 6902 operations, applied in order; a failing test operation fails the overlay.',
      items: {
        type: 'object',
        required: ['op', 'path'],
        properties: {
          op: { type: 'string', enum: ['add', 'remove', 'replace', 'move', 'copy', 'test'] },
          path: { type: 'string', maxLength: 1024, description: 'A JSON pointer (RFC 6901), e.g. /spec/template/spec/tolerations/-.' },
          from: { type: 'string', maxLength: 1024 },
          value: { 'x-kubernetes-preserve-unknown-fields': true, description: 'Any JSON value (add, replace, test).' },
        },
      },
    },
  },
  oneOf: [{ required: ['strategicMerge'] }, { required: ['jsonPatch'] }],
}

/** The schema of `spec.overlays`. */
export const OVERLAYS_SCHEMA = {
  type: 'array',
  maxItems: MAX_OVERLAYS,
  'x-kubernetes-list-type': 'atomic',
  description: 'Last-mile patches of the objects the chart renders for this Memcached (kustomize\'s patches), applied after the platform\'s overlays and bounded by what the chart declares patchable (kinds.yaml). See docs/operator.md.',
  items: OVERLAY_SCHEMA,
}
