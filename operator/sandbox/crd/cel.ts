/**
 * The `x-kubernetes-validations` step of a custom resource's validation, as
 * apiextensions-apiserver's customresource strategy runs it (pkg/registry/customresource/strategy.go):
 * after the OpenAPI schema, and only when the schema found nothing that blocks it
 * (hasBlockingErr); on an update with the old object, so that transition rules run and the errors
 * of unchanged fields are ratcheted. Also the CRD's side: a rule that does not compile refuses the
 * CRD (pkg/apis/apiextensions/validation/validation.go).
 */
import { ruleDeclarationProblems } from '../../kube/cel/declarations.ts'
import { hasRules, validateRules, type RuleFailure, type RuleSchema } from '../../kube/cel/rules.ts'
import type { FieldCause, JsonObject } from '../types.ts'
import { badValue, duplicate, forbidden, required, type Schema } from './schema.ts'

/** The field error types that stop CEL validation (strategy.go hasBlockingErr). */
const BLOCKING = new Set(['FieldValueNotSupported', 'FieldValueRequired', 'FieldValueTooLong', 'FieldValueTooMany', 'FieldValueTypeInvalid'])

/** A rule's failure as the field error the API server returns for it. */
export function ruleCause(f: RuleFailure): FieldCause {
  switch (f.reason) {
    case 'FieldValueForbidden':
      return forbidden(f.field, f.detail)
    case 'FieldValueRequired':
      return required(f.field, f.detail)
    case 'FieldValueDuplicate':
      return duplicate(f.field, f.value?.v)
    default:
      // field.Invalid; a rule of an object or a list omits the value (field.OmitValueType).
      return { reason: 'FieldValueInvalid', message: `Invalid value: ${f.value ? `${badValue(f.value.v)}: ` : ''}${f.detail}`, field: f.field }
  }
}

/**
 * The errors of a custom resource's rules, given the errors its schema validation found: when
 * one of those blocks, the rules are not run and one error says so.
 */
export function ruleCauses(schema: Schema, obj: JsonObject, old: JsonObject | undefined, schemaCauses: FieldCause[]): FieldCause[] {
  if (!hasRules(schema)) return []
  if (schemaCauses.some((c) => BLOCKING.has(c.reason))) {
    return [{ reason: 'FieldValueInvalid', message: 'Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation', field: '<nil>' }]
  }
  return validateRules(schema as RuleSchema, obj, old).errors.map(ruleCause)
}

/** The problems of a CRD version's rules, as the API server refuses the CRD for them. */
export function ruleDeclarationCauses(schema: Schema, path: string): FieldCause[] {
  return ruleDeclarationProblems(schema, path).map((p) => {
    switch (p.type) {
      case 'Required':
        return required(p.field, p.detail)
      case 'NotSupported':
        return { reason: 'FieldValueNotSupported', message: `Unsupported value: ${p.value}: supported values: ${p.detail}`, field: p.field }
      default:
        return { reason: 'FieldValueInvalid', message: `Invalid value: ${p.value}: ${p.detail}`, field: p.field }
    }
  })
}
