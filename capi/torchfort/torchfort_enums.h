/* TorchFort's enumerations (NVIDIA/TorchFort v0.4.0's torchfort_enums.h): the CPU device, the datatypes and the
 * result codes, with TorchFort's values; typedef'd so that C99 code names them as C++ does. Included by
 * <torchfort.h>. Written by ktr. */
#ifndef KTR_TORCHFORT_ENUMS_H
#define KTR_TORCHFORT_ENUMS_H

#define TORCHFORT_DEVICE_CPU (-1)

typedef enum torchfort_datatype_t {
  TORCHFORT_FLOAT = -1,
  TORCHFORT_DOUBLE = -2,
  TORCHFORT_INT32 = -3,
  TORCHFORT_INT64 = -4
} torchfort_datatype_t;

typedef enum torchfort_result_t {
  TORCHFORT_RESULT_SUCCESS = 0,        /* the operation completed successfully */
  TORCHFORT_RESULT_INVALID_USAGE = 1,  /* a user error, typically an invalid argument */
  TORCHFORT_RESULT_NOT_SUPPORTED = 2,  /* an operation or configuration ktr does not support */
  TORCHFORT_RESULT_INTERNAL_ERROR = 3, /* an internal library error, to be reported */
  TORCHFORT_RESULT_CUDA_ERROR = 4,     /* an error of the device runtime */
  TORCHFORT_RESULT_MPI_ERROR = 5,      /* an error of the MPI library */
  TORCHFORT_RESULT_NCCL_ERROR = 6      /* an error of NCCL (ktr does not use it) */
} torchfort_result_t;

#endif /* KTR_TORCHFORT_ENUMS_H */
