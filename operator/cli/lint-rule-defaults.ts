/**
 * A rule between values judges a spec as the API server sees it, without values.yaml, so the
 * defaults it reads (`self.?a.orValue(x)`) must be values.yaml's. `lint` judges each of its
 * instances twice, on what the spec and overrides say and on that merged over values.yaml: a rule
 * whose verdict differs holds a default that is not the chart's.
 */
import { hasRules, validateRules, type RuleSchema } from '../kube/cel/rules.ts'
import type { Chart } from '../render/chart.ts'
import type { RenderInput } from '../render/engine.ts'
import { cloneData, isPlainMap, mergeAll, type Values } from '../render/values.ts'

function verdicts(chart: Chart, values: Values): string[] {
  return validateRules(chart.schema as RuleSchema, values, undefined, 'spec').errors.map((f) => `${f.field}: ${f.detail}`)
}

/** The problems of the rules whose defaults are not values.yaml's, as this instance shows them. */
export function ruleDefaultProblems(chart: Chart, input: RenderInput): string[] {
  if (!hasRules(chart.schema) || !isPlainMap(input.spec)) return []
  const given = mergeAll([cloneData(input.spec) as Values, ...(input.overrides ?? [])])
  // A value of the wrong type is the schema's problem (the render reports it), not the rules'.
  if (chart.validate(mergeAll([chart.defaults, given])).length > 0) return []
  const alone = verdicts(chart, given)
  const merged = verdicts(chart, mergeAll([chart.defaults, given]))
  const why = 'a default the rule reads (orValue) is not the one values.yaml gives'
  return [
    ...alone.filter((p) => !merged.includes(p)).map((p) => `values.schema.json: a rule refuses the spec but not the spec over values.yaml (${why}): ${p}`),
    ...merged.filter((p) => !alone.includes(p)).map((p) => `values.schema.json: a rule refuses the spec over values.yaml but not the spec (${why}): ${p}`),
  ]
}
