package serve

import (
	"errors"

	"github.com/agenthost/agenthost/abi"
)

func asABI(err error, target **abi.Error) bool { return errors.As(err, target) }
