/* vkattn_attention's argument checks: tensors, shapes and variants
 * (attention_args.c), and the values of the sequence tables as last uploaded
 * (attention_sequences.c). */
#ifndef VKATTN_ATTENTION_ARGS_H
#define VKATTN_ATTENTION_ARGS_H

#include "ops_common.h"

/* Checks every argument of the call and resolves the problem it describes. */
vkattn_status attention_check_args(vkattn_context *ctx, const vkattn_attention_desc *d,
                                   const vkattn_tensor *q, const vkattn_tensor *k,
                                   const vkattn_tensor *v, const vkattn_tensor *o,
                                   attention_dims *dims);

/* The window, softcap, sinks, ALiBi and mask of `a` into dims->var (also for
 * the layer, whose dims are set otherwise); `op` names the call in messages. */
vkattn_status attention_check_variants(vkattn_context *ctx, const char *op,
                                      const vkattn_attention_desc *a, attention_dims *d);

/* Checks the values of cu_seqlens, block_table and kv_len as last uploaded
 * (nothing is read from the device); sets dims->Tq and Tk to the longest packed
 * sequences. Values never uploaded are not checked: Tq and Tk stay the packed
 * totals and the kernels clamp (vkattn.h). */
vkattn_status attention_check_sequences(vkattn_context *ctx, const vkattn_attention_desc *desc,
                                        attention_dims *d);

#endif
