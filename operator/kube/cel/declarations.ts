/**
 * What apiextensions' CRD validation says of a schema's `x-kubernetes-validations`
 * (pkg/apis/apiextensions/validation/validation.go, ValidateCustomResourceDefinitionOpenAPISchema):
 * each rule given, messages without line breaks, a known reason, a fieldPath that exists, and
 * rules and messageExpressions that compile. A CRD with such a problem is refused at creation;
 * `lint` reports the same problems of a chart's values schema.
 */
import { compiledRules, RULE_REASONS, type RuleSchema, type ValidationRule } from './rules.ts'

/** A problem of a rule's declaration, as the field error the API server makes of it. */
export interface DeclarationProblem {
  field: string
  type: 'Invalid' | 'Required' | 'NotSupported'
  /** The bad value as field.Error prints it (Invalid, NotSupported); NotSupported's detail is the supported values. */
  value?: string
  detail: string
}

/**
 * The internal ValidationRule as field.Error prints it for a rule that does not compile: marshalled
 * to JSON (the internal type has no json tags, so its fields keep their Go names; encoding/json
 * escapes <, > and & for HTML).
 */
export function goValidationRule(r: ValidationRule): string {
  const json = JSON.stringify({ Rule: r.rule ?? '', Message: r.message ?? '', MessageExpression: r.messageExpression ?? '', Reason: r.reason ?? null, FieldPath: r.fieldPath ?? '', OptionalOldSelf: r.optionalOldSelf ?? null })
  return json.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** The problems of one node's rules (not its children's): those of the declaration, then CEL's. */
function nodeProblems(schema: RuleSchema, path: string, schemaErrors: DeclarationProblem[], celErrors: DeclarationProblem[]): void {
  const rules = schema['x-kubernetes-validations']
  if (!Array.isArray(rules) || rules.length === 0) return
  const out = schemaErrors
  const at = (i: number, f: string) => `${path}.x-kubernetes-validations[${i}].${f}`
  const compiled = compiledRules(schema)
  rules.forEach((r, i) => {
    const rule = r.rule ?? ''
    if (rule.trim() === '') out.push({ field: at(i, 'rule'), type: 'Required', detail: 'rule is not specified' })
    if (r.message !== undefined && r.message.trim() === '') out.push({ field: at(i, 'message'), type: 'Invalid', value: JSON.stringify(r.message), detail: 'must be non-empty if specified' })
    else if (r.message !== undefined && /[\n]/.test(r.message)) out.push({ field: at(i, 'message'), type: 'Invalid', value: JSON.stringify(r.message), detail: 'must not contain line breaks' })
    if (/[\n]/.test(rule) && (r.message ?? '') === '') out.push({ field: at(i, 'message'), type: 'Required', detail: 'message must be specified if rule contains line breaks' })
    if (r.messageExpression !== undefined && r.messageExpression.trim() === '') out.push({ field: at(i, 'messageExpression'), type: 'Required', detail: 'messageExpression must be non-empty if specified' })
    if (r.reason !== undefined && !RULE_REASONS.includes(r.reason)) out.push({ field: at(i, 'reason'), type: 'NotSupported', value: JSON.stringify(r.reason), detail: RULE_REASONS.map((x) => JSON.stringify(x)).join(', ') })
    if (r.fieldPath !== undefined) {
      if (r.fieldPath.trim() === '') out.push({ field: at(i, 'fieldPath'), type: 'Invalid', value: JSON.stringify(r.fieldPath), detail: 'must be non-empty if specified' })
      else if (/[\n]/.test(r.fieldPath)) out.push({ field: at(i, 'fieldPath'), type: 'Invalid', value: JSON.stringify(r.fieldPath), detail: 'must not contain line breaks' })
      else if (compiled[i]?.fieldPathError !== undefined) out.push({ field: at(i, 'fieldPath'), type: 'Invalid', value: JSON.stringify(r.fieldPath), detail: 'must be a valid path' })
    }
  })
  compiled.forEach((c, i) => {
    if (c.error !== undefined) celErrors.push({ field: at(i, 'rule'), type: 'Invalid', value: goValidationRule(c.rule), detail: c.error })
    else if (c.messageError !== undefined) celErrors.push({ field: at(i, 'messageExpression'), type: 'Invalid', value: goValidationRule(c.rule), detail: c.messageError })
    if (c.rule.optionalOldSelf === true && !c.usesOldSelf && c.error === undefined) {
      celErrors.push({ field: at(i, 'optionalOldSelf'), type: 'Invalid', value: 'true', detail: 'may not be set if oldSelf is not used in rule' })
    }
  })
}

function collect(schema: unknown, path: string, schemaErrors: DeclarationProblem[], celErrors: DeclarationProblem[]): void {
  if (!isMap(schema)) return
  nodeProblems(schema as RuleSchema, path, schemaErrors, celErrors)
  if (isMap(schema.properties)) for (const [k, v] of Object.entries(schema.properties)) collect(v, `${path}.properties[${k}]`, schemaErrors, celErrors)
  if (isMap(schema.additionalProperties)) collect(schema.additionalProperties, `${path}.additionalProperties`, schemaErrors, celErrors)
  if (isMap(schema.items)) collect(schema.items, `${path}.items`, schemaErrors, celErrors)
}

/**
 * The problems of every rule in a schema, each at its path below `path` (the API server's
 * spelling: `….properties[spec].x-kubernetes-validations[0].rule`): those of the declarations
 * first, then those of compiling the rules, as validation.go returns SchemaErrors before CELErrors.
 */
export function ruleDeclarationProblems(schema: unknown, path: string): DeclarationProblem[] {
  const schemaErrors: DeclarationProblem[] = []
  const celErrors: DeclarationProblem[] = []
  collect(schema, path, schemaErrors, celErrors)
  return [...schemaErrors, ...celErrors]
}

/** A problem as one line: `path: detail`. */
export function declarationLine(p: DeclarationProblem): string {
  return p.type === 'NotSupported' ? `${p.field}: unsupported value ${p.value}: supported values: ${p.detail}` : `${p.field}: ${p.detail}`
}
