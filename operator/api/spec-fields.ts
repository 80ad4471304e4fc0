/**
 * The fields of a Memcached's spec that the operator reads itself, beside the chart's values. The
 * CRD declares them next to the chart's schema; the render never sees them as values; a chart may
 * not declare a value of the same name (lint refuses it).
 */
export const OPERATOR_SPEC_FIELDS: Readonly<Record<string, Record<string, unknown>>> = {
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
  if (!Object.keys(OPERATOR_SPEC_FIELDS).some((k) => Object.hasOwn(spec, k))) return spec
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(spec)) if (!Object.hasOwn(OPERATOR_SPEC_FIELDS, k)) out[k] = v
  return out
}
