// Package memberstest holds the fixtures the members, endpoints and
// endpointslice tests share: a service with its ports, and a ready pod
// that options change, as store/storetest does for the store.
package memberstest
