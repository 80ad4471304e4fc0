/**
 * The objects of the Kubernetes API as plain JSON with typed metadata, and the field-level
 * validation failure the API server reports: the vocabulary the operator, its checks and the
 * sandbox share.
 */

/** A JSON value as stored by the API server. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
export type JsonObject = { [key: string]: Json }

export interface OwnerReference {
  apiVersion: string
  kind: string
  name: string
  uid: string
  controller?: boolean
  blockOwnerDeletion?: boolean
}

export interface ManagedFieldsEntry {
  manager: string
  operation: 'Apply' | 'Update'
  apiVersion: string
  time: string
  fieldsType: 'FieldsV1'
  fieldsV1: JsonObject
  subresource?: string
}

export interface ObjectMeta {
  name?: string
  generateName?: string
  namespace?: string
  uid?: string
  resourceVersion?: string
  generation?: number
  creationTimestamp?: string
  deletionTimestamp?: string
  deletionGracePeriodSeconds?: number
  labels?: Record<string, string>
  annotations?: Record<string, string>
  ownerReferences?: OwnerReference[]
  finalizers?: string[]
  managedFields?: ManagedFieldsEntry[]
}

/** Any object of the API: plain JSON with typed metadata. */
export interface KubeObject {
  apiVersion: string
  kind: string
  metadata: ObjectMeta
  [field: string]: unknown
}

/** One field-level validation failure, rendered the way the API server renders it. */
export interface FieldCause {
  /** `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, `FieldValueForbidden`, … */
  reason: string
  /** e.g. `Invalid value: -1: spec.size in body should be greater than or equal to 0` */
  message: string
  /** e.g. `spec.size` */
  field: string
}

/** Where a kind keeps its replica counts and selector: the paths the scale subresource maps. */
export interface ScaleSubresource {
  specReplicasPath: string
  statusReplicasPath: string
  labelSelectorPath?: string
}
