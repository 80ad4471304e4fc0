/**
 * The name and value checks of apimachinery pkg/util/validation/validation.go, with its messages:
 * each returns the list of problems (empty when valid), exactly as upstream words them, so that
 * callers can make one field error per message as upstream's validators do.
 */

const qualifiedNameFmt = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'
const qualifiedNameErrMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
const labelValueFmt = `(${qualifiedNameFmt})?`
const labelValueErrMsg =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?'
const dns1123LabelErrMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`
const dns1123SubdomainErrorMsg =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
const dns1123LabelFmtWithUnderscore = '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?'
const dns1123SubdomainFmtWithUnderscore = `${dns1123LabelFmtWithUnderscore}(\\.${dns1123LabelFmtWithUnderscore})*`
const dns1123SubdomainErrorMsgFG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character"
const dns1035LabelFmt = '[a-z]([-a-z0-9]*[a-z0-9])?'
const dns1035LabelErrMsg =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character"
const wildcardDNS1123SubdomainFmt = `\\*\\.${dns1123SubdomainFmt}`
const wildcardDNS1123SubdomainErrMsg =
  "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character"
const cIdentifierFmt = '[A-Za-z_][A-Za-z0-9_]*'
const identifierErrMsg = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'"
const percentFmt = '[0-9]+%'
const httpHeaderNameFmt = '[-A-Za-z0-9]+'
const configMapKeyFmt = '[-._a-zA-Z0-9]+'
const httpPathFmt = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"

const whole = (fmt: string): RegExp => new RegExp(`^${fmt}$`)
const qualifiedNameRe = whole(qualifiedNameFmt)
const labelValueRe = whole(labelValueFmt)
const dns1123LabelRe = whole(dns1123LabelFmt)
const dns1123SubdomainRe = whole(dns1123SubdomainFmt)
const dns1123SubdomainWithUnderscoreRe = whole(dns1123SubdomainFmtWithUnderscore)
const dns1035LabelRe = whole(dns1035LabelFmt)
const wildcardRe = whole(wildcardDNS1123SubdomainFmt)
const cIdentifierRe = whole(cIdentifierFmt)
const percentRe = whole(percentFmt)
const httpHeaderNameRe = whole(httpHeaderNameFmt)
const configMapKeyRe = whole(configMapKeyFmt)
const httpPathRe = whole(httpPathFmt)

/** Go's len(): bytes of the UTF-8 encoding. */
const byteLength = (s: string): number => Buffer.byteLength(s, 'utf8')

/** validation.MaxLenError. */
export const maxLenError = (n: number): string => `must be no more than ${n} characters`
/** validation.EmptyError. */
export const emptyError = (): string => 'must be non-empty'
/** validation.InclusiveRangeError. */
export const inclusiveRangeError = (lo: number, hi: number): string => `must be between ${lo} and ${hi}, inclusive`

/** validation.RegexError. */
export function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`
}

/** IsQualifiedName: `[prefix/]name`, a label or annotation key. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = []
  const parts = value.split('/')
  let name: string
  if (parts.length === 1) name = parts[0] as string
  else if (parts.length === 2) {
    const prefix = parts[0] as string
    name = parts[1] as string
    if (prefix.length === 0) errs.push(`prefix part ${emptyError()}`)
    else for (const m of isDNS1123Subdomain(prefix)) errs.push(`prefix part ${m}`)
  } else {
    return [`a qualified name ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`]
  }
  if (name.length === 0) errs.push(`name part ${emptyError()}`)
  else if (byteLength(name) > 63) errs.push(`name part ${maxLenError(63)}`)
  if (!qualifiedNameRe.test(name)) errs.push(`name part ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')}`)
  return errs
}

/** IsValidLabelValue. */
export function isValidLabelValue(value: string): string[] {
  const errs: string[] = []
  if (byteLength(value) > 63) errs.push(maxLenError(63))
  if (!labelValueRe.test(value)) errs.push(regexError(labelValueErrMsg, labelValueFmt, 'MyValue', 'my_value', '12345'))
  return errs
}

/** IsDNS1123Label. */
export function isDNS1123Label(value: string): string[] {
  const errs: string[] = []
  if (byteLength(value) > 63) errs.push(maxLenError(63))
  if (!dns1123LabelRe.test(value)) {
    if (dns1123SubdomainRe.test(value)) errs.push('must not contain dots')
    else errs.push(regexError(dns1123LabelErrMsg, dns1123LabelFmt, 'my-name', '123-abc'))
  }
  return errs
}

/** IsDNS1123Subdomain. */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = []
  if (byteLength(value) > 253) errs.push(maxLenError(253))
  if (!dns1123SubdomainRe.test(value)) errs.push(regexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, 'example.com'))
  return errs
}

/** IsDNS1123SubdomainWithUnderscore. */
export function isDNS1123SubdomainWithUnderscore(value: string): string[] {
  const errs: string[] = []
  if (byteLength(value) > 253) errs.push(maxLenError(253))
  if (!dns1123SubdomainWithUnderscoreRe.test(value)) errs.push(regexError(dns1123SubdomainErrorMsgFG, dns1123SubdomainFmtWithUnderscore, 'example.com'))
  return errs
}

/** IsDNS1035Label. */
export function isDNS1035Label(value: string): string[] {
  const errs: string[] = []
  if (byteLength(value) > 63) errs.push(maxLenError(63))
  if (!dns1035LabelRe.test(value)) errs.push(regexError(dns1035LabelErrMsg, dns1035LabelFmt, 'my-name', 'abc-123'))
  return errs
}

/** IsWildcardDNS1123Subdomain. */
export function isWildcardDNS1123Subdomain(value: string): string[] {
  const errs: string[] = []
  if (byteLength(value) > 253) errs.push(maxLenError(253))
  if (!wildcardRe.test(value)) errs.push(regexError(wildcardDNS1123SubdomainErrMsg, wildcardDNS1123SubdomainFmt, '*.example.com'))
  return errs
}

/** IsCIdentifier. */
export function isCIdentifier(value: string): string[] {
  return cIdentifierRe.test(value) ? [] : [regexError(identifierErrMsg, cIdentifierFmt, 'my_name', 'MY_NAME', 'MyName')]
}

/** IsValidPortNum. */
export function isValidPortNum(port: number): string[] {
  return port >= 1 && port <= 65535 ? [] : [inclusiveRangeError(1, 65535)]
}

/** IsInRange. */
export function isInRange(value: number, min: number, max: number): string[] {
  return value >= min && value <= max ? [] : [inclusiveRangeError(min, max)]
}

/** IsValidGroupID. */
export function isValidGroupID(gid: number): string[] {
  return gid >= 0 && gid <= 2147483647 ? [] : [inclusiveRangeError(0, 2147483647)]
}

/** IsValidUserID. */
export function isValidUserID(uid: number): string[] {
  return uid >= 0 && uid <= 2147483647 ? [] : [inclusiveRangeError(0, 2147483647)]
}

/** IsValidPortName (an IANA_SVC_NAME). */
export function isValidPortName(port: string): string[] {
  const errs: string[] = []
  if (byteLength(port) > 15) errs.push(maxLenError(15))
  if (!/^[-a-z0-9]+$/.test(port)) errs.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)')
  if (!/[a-z]/.test(port)) errs.push('must contain at least one letter (a-z)')
  if (port.includes('--')) errs.push('must not contain consecutive hyphens')
  if (port.length > 0 && (port.startsWith('-') || port.endsWith('-'))) errs.push('must not begin or end with a hyphen')
  return errs
}

/** IsValidPercent. */
export function isValidPercent(percent: string): string[] {
  return percentRe.test(percent) ? [] : [regexError("a valid percent string must be a numeric string followed by an ending '%'", percentFmt, '1%', '93%')]
}

/** IsHTTPHeaderName. */
export function isHTTPHeaderName(value: string): string[] {
  return httpHeaderNameRe.test(value) ? [] : [regexError("a valid HTTP header must consist of alphanumeric characters or '-'", httpHeaderNameFmt, 'X-Header-Name')]
}

function hasChDirPrefix(value: string): string[] {
  if (value === '.') return ["must not be '.'"]
  if (value === '..') return ["must not be '..'"]
  if (value.startsWith('..')) return ["must not start with '..'"]
  return []
}

/** IsRelaxedEnvVarName: printable ASCII but `=`. */
export function isRelaxedEnvVarName(value: string): string[] {
  const errs: string[] = []
  if (value.length === 0) errs.push(`environment variable name ${emptyError()}`)
  for (const c of value) {
    const r = c.codePointAt(0) as number
    if (r > 0x7e || r < 0x20 || c === '=') {
      errs.push("a valid environment variable name must consist only of printable ASCII characters other than '='")
      break
    }
  }
  return errs
}

/** IsConfigMapKey. */
export function isConfigMapKey(value: string): string[] {
  const errs: string[] = []
  if (byteLength(value) > 253) errs.push(maxLenError(253))
  if (!configMapKeyRe.test(value)) errs.push(regexError("a valid config key must consist of alphanumeric characters, '-', '_' or '.'", configMapKeyFmt, 'key.name', 'KEY_NAME', 'key-name'))
  return [...errs, ...hasChDirPrefix(value)]
}

/** A field error of the functions below that take a path: `<path>: <Type>: <value>: <detail>` when printed. */
export interface NameError {
  type: 'Required value' | 'Invalid value'
  value: string
  detail: string
}

/** IsFullyQualifiedName: a subdomain with at least three segments. */
export function isFullyQualifiedName(name: string): NameError[] {
  if (name.length === 0) return [{ type: 'Required value', value: '', detail: '' }]
  const errs = isDNS1123Subdomain(name)
  if (errs.length > 0) return [{ type: 'Invalid value', value: name, detail: errs.join(',') }]
  if (name.split('.').length < 3) return [{ type: 'Invalid value', value: name, detail: 'should be a domain with at least three segments separated by dots' }]
  return []
}

/** IsFullyQualifiedDomainName: a subdomain of at least two labels, a trailing dot allowed. */
export function isFullyQualifiedDomainName(name: string): NameError[] {
  if (name.length === 0) return [{ type: 'Required value', value: '', detail: '' }]
  const n = name.endsWith('.') ? name.slice(0, -1) : name
  const errs = isDNS1123Subdomain(n)
  if (errs.length > 0) return [{ type: 'Invalid value', value: n, detail: errs.join(',') }]
  if (n.split('.').length < 2) return [{ type: 'Invalid value', value: n, detail: 'should be a domain with at least two segments separated by dots' }]
  for (const label of n.split('.')) {
    const e = isDNS1123Label(label)
    if (e.length > 0) return [{ type: 'Invalid value', value: label, detail: e.join(',') }]
  }
  return []
}

/** IsDomainPrefixedPath: `host/path`. */
export function isDomainPrefixedPath(dpPath: string): NameError[] {
  if (dpPath.length === 0) return [{ type: 'Required value', value: '', detail: '' }]
  const slash = dpPath.indexOf('/')
  const host = slash < 0 ? dpPath : dpPath.slice(0, slash)
  const path = slash < 0 ? '' : dpPath.slice(slash + 1)
  if (slash < 0 || host.length === 0 || path.length === 0) return [{ type: 'Invalid value', value: dpPath, detail: 'must be a domain-prefixed path (such as "acme.io/foo")' }]
  const errs: NameError[] = isDNS1123Subdomain(host).map((detail) => ({ type: 'Invalid value', value: host, detail }))
  if (!httpPathRe.test(path)) errs.push({ type: 'Invalid value', value: path, detail: regexError('Invalid path', httpPathFmt) })
  return errs
}

/** A {@link NameError} printed as field.Error prints it. */
export function nameErrorString(field: string, e: NameError): string {
  if (e.type === 'Required value') return `${field}: Required value${e.detail === '' ? '' : `: ${e.detail}`}`
  return `${field}: Invalid value: ${JSON.stringify(e.value)}: ${e.detail}`
}
