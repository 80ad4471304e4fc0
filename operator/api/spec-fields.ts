/**
 * The fields of a Memcached's spec that the operator reads itself, beside the chart's values. The
 * CRD declares them next to the chart's schema; the render never sees them as values; a chart may
 * not declare a value of the same name (lint refuses it).
 */
import { OVERLAYS_SCHEMA } from '../render/overlay-schema.ts'

export const OPERATOR_SPEC_FIELDS: Readonly<Record<string, Record<string, unknown>>> = {
  overlays: OVERLAYS_SCHEMA,
}

/** The chart's values of a spec: the spec without the operator's fields. */
export function chartValuesOf(spec: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined
  for (const k of Object.keys(OPERATOR_SPEC_FIELDS)) {
    if (!Object.hasOwn(spec, k)) continue
    out ??= { ...spec }
    delete out[k]
  }
  return out ?? spec
}
