/**
 * The create-only APIs of authentication and authorization, answered from the request and never
 * stored: SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview and
 * SelfSubjectRulesReview (authorization.k8s.io/v1; `kubectl auth can-i`, with `--list` too),
 * SelfSubjectReview and TokenReview (authentication.k8s.io/v1; `kubectl auth whoami`), and
 * TokenRequest, the `serviceaccounts/<name>/token` subresource (`kubectl create token`).
 */
import { StatusError, badRequest, invalid, notFound } from '../errors.ts'
import { rfc3339 } from '../../kube/time.ts'
import type { Store } from '../store.ts'
import type { ApiRequest, FieldCause } from '../types.ts'
import { defaultAudience, type Authenticator } from './authn.ts'
import { aggregateMessage, type Attributes, type RbacAuthorizer } from './rbac.ts'
import type { UserInfo } from './user.ts'

type Json = Record<string, unknown>
/** What a review answers: a status and a body. */
export interface ReviewReply {
  status: number
  body: unknown
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [])
const str = (v: unknown): string => (typeof v === 'string' ? v : '')

/** The resources this file serves, by `group/resource[/subresource]`. */
export const reviewResources = new Set([
  'authorization.k8s.io/subjectaccessreviews',
  'authorization.k8s.io/selfsubjectaccessreviews',
  'authorization.k8s.io/localsubjectaccessreviews',
  'authorization.k8s.io/selfsubjectrulesreviews',
  'authentication.k8s.io/selfsubjectreviews',
  'authentication.k8s.io/tokenreviews',
  '/serviceaccounts/token',
])

function bodyOf(req: ApiRequest, kind: string, apiVersion: string): Json {
  const body = req.body
  if (!isObject(body)) throw badRequest('the body of the request is not a JSON object')
  if (body.apiVersion !== undefined && body.apiVersion !== apiVersion) throw badRequest(`the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${apiVersion})`)
  if (body.kind !== undefined && body.kind !== kind) throw badRequest(`the kind in the data (${String(body.kind)}) does not match the expected kind (${kind})`)
  return body
}

function metadataOf(body: Json, namespace?: string): Json {
  const m: Json = { ...(isObject(body.metadata) ? body.metadata : {}) }
  if (namespace) m.namespace = namespace
  m.creationTimestamp = null
  return m
}

function userInfoJson(u: UserInfo): Json {
  const out: Json = { username: u.username }
  if (u.uid) out.uid = u.uid
  out.groups = u.groups
  if (u.extra && Object.keys(u.extra).length > 0) out.extra = u.extra
  return out
}

/** The attributes a SubjectAccessReview spec asks about, after validation. */
function specAttributes(kind: string, spec: Json, user: UserInfo, requireUser: boolean, namespace?: string): Attributes {
  const causes: FieldCause[] = []
  const res = spec.resourceAttributes
  const non = spec.nonResourceAttributes
  if (isObject(res) && isObject(non)) causes.push({ reason: 'FieldValueInvalid', field: 'spec.nonResourceAttributes', message: `Invalid value: ${JSON.stringify(non)}: cannot be specified in combination with resourceAttributes` })
  if (!isObject(res) && !isObject(non)) causes.push({ reason: 'FieldValueInvalid', field: 'spec.resourceAttributes', message: 'Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified' })
  if (requireUser && user.username === '' && user.groups.length === 0) causes.push({ reason: 'FieldValueInvalid', field: 'spec.user', message: 'Invalid value: "": at least one of user or group must be specified' })
  if (namespace !== undefined && isObject(res) && str(res.namespace) !== namespace)
    causes.push({ reason: 'FieldValueInvalid', field: 'spec.resourceAttributes.namespace', message: `Invalid value: ${JSON.stringify(str(res.namespace))}: must match metadata.namespace` })
  if (causes.length > 0) throw invalid('authorization.k8s.io', kind, '', causes)
  if (isObject(res)) {
    const a: Attributes = { user, verb: str(res.verb), resourceRequest: true, group: str(res.group), version: str(res.version), resource: str(res.resource) }
    if (str(res.subresource)) a.subresource = str(res.subresource)
    if (str(res.namespace)) a.namespace = str(res.namespace)
    if (str(res.name)) a.name = str(res.name)
    return a
  }
  const n = non as Json
  return { user, verb: str(n.verb), resourceRequest: false, path: str(n.path) }
}

/** Answers the review APIs and TokenRequest for one sandbox. */
export class Reviews {
  #authz: RbacAuthorizer
  #authn: Authenticator
  #store: Store

  constructor(authz: RbacAuthorizer, authn: Authenticator, store: Store) {
    this.#authz = authz
    this.#authn = authn
    this.#store = store
  }

  /** The answer to a create of one of {@link reviewResources}, as `user`. */
  serve(req: ApiRequest, user: UserInfo): ReviewReply {
    const key = `${req.group}/${req.resource}${req.subresource ? `/${req.subresource}` : ''}`
    switch (key) {
      case 'authorization.k8s.io/selfsubjectaccessreviews':
      case 'authorization.k8s.io/subjectaccessreviews':
      case 'authorization.k8s.io/localsubjectaccessreviews':
        return this.#accessReview(req, user)
      case 'authorization.k8s.io/selfsubjectrulesreviews':
        return this.#rulesReview(req, user)
      case 'authentication.k8s.io/selfsubjectreviews': {
        const body = bodyOf(req, 'SelfSubjectReview', 'authentication.k8s.io/v1')
        return { status: 201, body: { kind: 'SelfSubjectReview', apiVersion: 'authentication.k8s.io/v1', metadata: metadataOf(body), status: { userInfo: userInfoJson(user) } } }
      }
      case 'authentication.k8s.io/tokenreviews':
        return this.#tokenReview(req)
      default:
        return this.#tokenRequest(req)
    }
  }

  #accessReview(req: ApiRequest, requester: UserInfo): ReviewReply {
    const kind = req.resource === 'selfsubjectaccessreviews' ? 'SelfSubjectAccessReview' : req.resource === 'localsubjectaccessreviews' ? 'LocalSubjectAccessReview' : 'SubjectAccessReview'
    const body = bodyOf(req, kind, 'authorization.k8s.io/v1')
    const spec = isObject(body.spec) ? body.spec : {}
    let subject = requester
    if (kind !== 'SelfSubjectAccessReview') {
      subject = { username: str(spec.user), groups: strings(spec.groups) }
      if (str(spec.uid)) subject.uid = str(spec.uid)
      if (isObject(spec.extra)) subject.extra = Object.fromEntries(Object.entries(spec.extra).map(([k, v]) => [k, strings(v)]))
    }
    const attrs = specAttributes(kind, spec, subject, kind !== 'SelfSubjectAccessReview', kind === 'LocalSubjectAccessReview' ? req.namespace : undefined)
    const decision = this.#authz.authorize(attrs)
    const status: Json = { allowed: decision.allowed }
    if (decision.reason) status.reason = decision.reason
    const outSpec: Json = { ...spec }
    if (kind === 'SelfSubjectAccessReview') {
      delete outSpec.user
      delete outSpec.groups
    }
    return { status: 201, body: { kind, apiVersion: 'authorization.k8s.io/v1', metadata: metadataOf(body, req.namespace), spec: outSpec, status } }
  }

  #rulesReview(req: ApiRequest, user: UserInfo): ReviewReply {
    const body = bodyOf(req, 'SelfSubjectRulesReview', 'authorization.k8s.io/v1')
    const spec = isObject(body.spec) ? body.spec : {}
    const namespace = str(spec.namespace)
    if (namespace === '') throw badRequest('no namespace on request')
    const { rules, errors } = this.#authz.rulesFor(user, namespace)
    const resourceRules: Json[] = []
    const nonResourceRules: Json[] = []
    for (const rule of rules) {
      if ((rule.resources ?? []).length > 0) {
        const r: Json = { verbs: rule.verbs }
        if (rule.apiGroups) r.apiGroups = rule.apiGroups
        r.resources = rule.resources
        if (rule.resourceNames && rule.resourceNames.length > 0) r.resourceNames = rule.resourceNames
        resourceRules.push(r)
      }
      if ((rule.nonResourceURLs ?? []).length > 0) nonResourceRules.push({ verbs: rule.verbs, nonResourceURLs: rule.nonResourceURLs })
    }
    const status: Json = { resourceRules, nonResourceRules, incomplete: false }
    if (errors.length > 0) status.evaluationError = aggregateMessage(errors)
    return { status: 201, body: { kind: 'SelfSubjectRulesReview', apiVersion: 'authorization.k8s.io/v1', metadata: metadataOf(body), spec: { namespace }, status } }
  }

  #tokenReview(req: ApiRequest): ReviewReply {
    const body = bodyOf(req, 'TokenReview', 'authentication.k8s.io/v1')
    const spec = isObject(body.spec) ? body.spec : {}
    const token = str(spec.token)
    if (token === '') throw invalid('authentication.k8s.io', 'TokenReview', '', [{ reason: 'FieldValueRequired', field: 'spec.token', message: 'Required value' }])
    const user = this.#authn.userOfToken(token)
    const status: Json = user ? { authenticated: true, user: userInfoJson(user), audiences: [defaultAudience] } : { user: {}, error: 'invalid bearer token' }
    return { status: 201, body: { kind: 'TokenReview', apiVersion: 'authentication.k8s.io/v1', metadata: metadataOf(body), spec, status } }
  }

  #tokenRequest(req: ApiRequest): ReviewReply {
    if (req.verb !== 'create') throw new StatusError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')
    const namespace = req.namespace ?? ''
    const name = req.name ?? ''
    const body = bodyOf(req, 'TokenRequest', 'authentication.k8s.io/v1')
    const sa = this.#store.get('/serviceaccounts', namespace, name)
    if (!sa) throw notFound('', 'serviceaccounts', name)
    const spec = isObject(body.spec) ? body.spec : {}
    const audiences = strings(spec.audiences).length > 0 ? strings(spec.audiences) : [defaultAudience]
    const seconds = spec.expirationSeconds === undefined || spec.expirationSeconds === null ? 3600 : Number(spec.expirationSeconds)
    if (!Number.isInteger(seconds) || seconds < 600)
      throw invalid('authentication.k8s.io', 'TokenRequest', name, [{ reason: 'FieldValueInvalid', field: 'spec.expirationSeconds', message: `Invalid value: ${JSON.stringify(spec.expirationSeconds)}: may not specify a duration less than 10 minutes` }])
    if (seconds > 2 ** 32)
      throw invalid('authentication.k8s.io', 'TokenRequest', name, [{ reason: 'FieldValueTooLong', field: 'spec.expirationSeconds', message: `Invalid value: ${seconds}: may not specify a duration larger than 2^32 seconds` }])
    const { token, expires } = this.#authn.serviceAccountToken(namespace, name, sa.obj.metadata.uid ?? '', audiences, seconds)
    return {
      status: 201,
      body: {
        kind: 'TokenRequest',
        apiVersion: 'authentication.k8s.io/v1',
        metadata: { name, namespace, creationTimestamp: rfc3339() },
        spec: { audiences, expirationSeconds: seconds, boundObjectRef: spec.boundObjectRef ?? null },
        status: { token, expirationTimestamp: rfc3339(expires) },
      },
    }
  }
}
