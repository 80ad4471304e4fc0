/**
 * The fields of a Memcached's spec that the operator reads itself, beside the chart's values. The
 * CRD declares them next to the chart's schema; the render never sees them as values; a chart may
 * not declare a value of the same name (lint refuses it). It sits on the render's floor, below
 * the API (api/crd.ts), because the render takes them out of a spec before it renders
 * (engine.ts) and the overlays' schema is the render's (overlay-schema.ts).
 */
import { OVERLAYS_SCHEMA } from './overlay-schema.ts'

export const OPERATOR_SPEC_FIELDS: Readonly<Record<string, Record<string, unknown>>> = {
  overlays: OVERLAYS_SCHEMA,
  chartRevision: {
    type: 'string',
    maxLength: 253,
    pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
    description:
      'The ChartRevision this instance is rendered with (a pin): the name of a cluster-scoped ChartRevision, e.g. memcached-3f2a9c1b0d7e. Unset: the default revision (the one labelled cache.example.com/default=true, else the operator\'s own chart). status.chartRevision says which one it runs. See docs/fleet.md.',
  },
  drift: {
    type: 'object',
    description:
      'What the operator does about drift: a field it applies that another manager (kubectl edit, a controller) changed. mode correct (default) applies the rendered value again; warn leaves every drifted field as it is and reports it (the Drifted condition, a Warning event naming the field manager); ignore lists paths never corrected in either mode, as Flux helm-controller\'s driftDetection.ignore.',
    properties: {
      mode: { type: 'string', enum: ['correct', 'warn'], description: 'correct (default): drift is corrected at the next reconcile; warn: drift is reported and left as it is. A change of the render (spec, chart) is applied in both.' },
      ignore: {
        type: 'array',
        maxItems: 32,
        description: 'Paths whose live value is never corrected (the rendered value applies only when the object is created).',
        items: {
          type: 'object',
          required: ['paths'],
          properties: {
            paths: { type: 'array', minItems: 1, maxItems: 32, items: { type: 'string', pattern: '^(/[^/]+)+$', maxLength: 512 }, description: 'JSON pointers (RFC 6901) into the object, e.g. /spec/replicas; an item of a keyed list by its key, /spec/template/spec/containers/[name="memcached"]/resources.' },
            target: {
              type: 'object',
              description: 'The objects the paths apply to (default: every object of the Memcached).',
              properties: {
                kind: { type: 'string', maxLength: 63, description: 'e.g. Deployment' },
                name: { type: 'string', maxLength: 253, description: 'The object\'s name' },
              },
            },
          },
        },
      },
    },
  },
}

/** The chart's values of a spec: the spec without the operator's fields. */
export function chartValuesOf(spec: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined
  for (const k of Object.keys(OPERATOR_SPEC_FIELDS)) {
    if (!Object.hasOwn(spec, k)) continue
    // A spread defines members (a `__proto__` key stays a member, never a prototype).
    out ??= { ...spec }
    delete out[k]
  }
  return out ?? spec
}
