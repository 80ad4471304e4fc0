/**
 * The fields of a Memcached's spec that the operator reads itself, beside the chart's values. The
 * CRD declares them next to the chart's schema; the render never sees them as values; a chart may
 * not declare a value of the same name (lint refuses it).
 */
export const OPERATOR_SPEC_FIELDS: Readonly<Record<string, Record<string, unknown>>> = {
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
  if (!Object.keys(OPERATOR_SPEC_FIELDS).some((f) => Object.hasOwn(spec, f))) return spec
  const out: Record<string, unknown> = Object.create(Object.getPrototypeOf(spec) as object | null) as Record<string, unknown>
  for (const [k, v] of Object.entries(spec)) if (!Object.hasOwn(OPERATOR_SPEC_FIELDS, k)) out[k] = v
  return out
}
