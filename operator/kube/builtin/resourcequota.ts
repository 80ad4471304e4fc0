/** ResourceQuota validation (pkg/apis/core/validation ValidateResourceQuota). */
import { formatQuantity, quantityOf, QuantityError, type Quantity } from '../quantity.ts'
import type { FieldCause, KubeObject } from '../object.ts'
import { invalid, isObj, q } from './field.ts'

/** Quota resource names with no `/` that the API accepts (helper.IsStandardQuotaResourceName). */
const standardQuotaNames = new Set([
  'pods', 'services', 'replicationcontrollers', 'resourcequotas', 'secrets', 'configmaps', 'persistentvolumeclaims',
  'services.nodeports', 'services.loadbalancers', 'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory',
  'requests.storage', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage',
])

/** Resources whose quantity must be whole (pkg/apis/core/helper IsIntegerResourceName). */
function isIntegerResource(name: string): boolean {
  return name.startsWith('count/') || ['pods', 'services', 'replicationcontrollers', 'resourcequotas', 'secrets', 'configmaps', 'persistentvolumeclaims', 'services.nodeports', 'services.loadbalancers'].includes(name)
}

/** ValidateResourceQuotaSpec: each `spec.hard` key is a quota resource, each value a non-negative quantity. */
export function validateResourceQuota(obj: KubeObject): FieldCause[] {
  const spec = isObj(obj.spec) ? obj.spec : {}
  const hard = isObj(spec.hard) ? spec.hard : {}
  const out: FieldCause[] = []
  for (const name of Object.keys(hard).sort()) {
    const path = `spec.hard[${name}]`
    if (!name.includes('/') && !standardQuotaNames.has(name) && !/^(requests\.)?hugepages-/.test(name)) out.push(invalid(path, q(name), 'must be a standard resource for quota'))
    const raw = hard[name]
    let value: Quantity
    try {
      value = quantityOf(typeof raw === 'number' ? raw : String(raw))
    } catch (e) {
      if (e instanceof QuantityError) out.push(invalid(path, q(String(raw)), e.message))
      continue
    }
    if (value.mantissa < 0n) out.push(invalid(path, q(formatQuantity(value)), 'must be greater than or equal to 0'))
    else if (isIntegerResource(name) && value.exponent < 0 && value.mantissa % 10n ** BigInt(-value.exponent) !== 0n) out.push(invalid(path, q(formatQuantity(value)), 'must be an integer'))
  }
  return out
}
