package replicate

import "github.com/mirrorctl/mirrorctl/replicate/clientrole"

// ClientRole says what a Kafka client obtained from [Clients] is for; see
// package replicate/clientrole.
type ClientRole = clientrole.Role

// The roles a [Clients] implementation must accept.
const (
	RoleConsumer = clientrole.Consumer
	RoleProducer = clientrole.Producer
	RoleAdmin    = clientrole.Admin
)
