/**
 * The fields of a Memcached's spec that the operator reads itself, beside the chart's values. The
 * CRD declares them next to the chart's schema; the render never sees them as values; a chart may
 * not declare a value of the same name (lint refuses it).
 */
import { OVERLAYS_SCHEMA } from '../render/overlay-schema.ts'

export const OPERATOR_SPEC_FIELDS: Readonly<Record<string, Record<string, unknown>>> = {
  overlays: OVERLAYS_SCHEMA,
  chartRevision: {
    type: 'string',
    maxLength: 253,
    pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
    description:
      'The ChartRevision this instance is rendered with (a pin): the name of a cluster-scoped ChartRevision, e.g. memcached-3f2a9c1b0d7e. Unset: the default revision (the one labelled cache.example.com/default=true, else the operator\'s own chart). status.chartRevision says which one it runs. See docs/fleet.md.',
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
