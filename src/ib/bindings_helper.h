/* SPDX-License-Identifier: GPL-2.0 */
/* What bindgen generates rswap's RDMA bindings from (see Kbuild). */
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include "helpers.h"
