! TorchFort's Fortran interface (NVIDIA/TorchFort v0.4.0), implemented by ktr: a program that does `use torchfort`
! builds unchanged against ktr's modules and trains through ktr. Written by ktr to TorchFort's published generic
! names, arguments and result codes. The specifics take assumed-rank arrays (ranks 1 to 5, real32 or real64, read
! in place through their strides); the loss's kind chooses the specific, and the checkpoint steps may be default or
! 64-bit integers. Every failure is printed to stderr as TorchFort prints it ("TORCHFORT::ERROR: ...") and
! returned. TorchFort's reinforcement learning (torchfort_rl_*) is declared and answers NOT_SUPPORTED
! (torchfort_rl.f90).
!
!   use torchfort
!   istat = torchfort_create_model("mymodel", "config.yaml", TORCHFORT_DEVICE_CPU)
!   istat = torchfort_train("mymodel", input, label, loss_val)      ! input(..., batch), label(..., batch)
!   istat = torchfort_inference("mymodel", input, output)
module torchfort
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64, error_unit
  use ktr, only: ktr_train, ktr_inference, ktr_last_error
  use ktr_torchfort_rl  ! torchfort_rl_*: declared, NOT_SUPPORTED; MPI_Comm and c_string (capi/torchfort_rl.f90)
  implicit none
  private

  integer, parameter, public :: TORCHFORT_FLOAT = -1, TORCHFORT_DOUBLE = -2, TORCHFORT_INT32 = -3, &
                                TORCHFORT_INT64 = -4
  integer, parameter, public :: TORCHFORT_RESULT_SUCCESS = 0, TORCHFORT_RESULT_INVALID_USAGE = 1, &
                                TORCHFORT_RESULT_NOT_SUPPORTED = 2, TORCHFORT_RESULT_INTERNAL_ERROR = 3, &
                                TORCHFORT_RESULT_CUDA_ERROR = 4, TORCHFORT_RESULT_MPI_ERROR = 5, &
                                TORCHFORT_RESULT_NCCL_ERROR = 6
  integer, parameter, public :: TORCHFORT_DEVICE_CPU = -1

  public :: torchfort_create_model, torchfort_create_distributed_model, torchfort_train, torchfort_inference, &
            torchfort_train_multiarg, torchfort_inference_multiarg, torchfort_save_model, torchfort_load_model, &
            torchfort_save_checkpoint, torchfort_load_checkpoint, torchfort_set_cudnn_benchmark, &
            torchfort_set_cuda_allow_tf32, torchfort_set_manual_seed, torchfort_set_cuda_manual_seed, &
            torchfort_wandb_log, torchfort_tensor_list_create, torchfort_tensor_list_destroy, &
            torchfort_tensor_list_add_tensor
  public :: torchfort_rl_off_policy_create_system, torchfort_rl_off_policy_create_distributed_system, &
            torchfort_rl_off_policy_wandb_log, torchfort_rl_off_policy_update_replay_buffer, &
            torchfort_rl_off_policy_train_step, torchfort_rl_off_policy_predict_explore, &
            torchfort_rl_off_policy_predict, torchfort_rl_off_policy_evaluate, &
            torchfort_rl_off_policy_save_checkpoint, torchfort_rl_off_policy_load_checkpoint, &
            torchfort_rl_off_policy_load_model, torchfort_rl_off_policy_is_ready, &
            torchfort_rl_on_policy_create_system, torchfort_rl_on_policy_create_distributed_system, &
            torchfort_rl_on_policy_wandb_log, torchfort_rl_on_policy_update_rollout_buffer, &
            torchfort_rl_on_policy_train_step, torchfort_rl_on_policy_predict_explore, &
            torchfort_rl_on_policy_predict, torchfort_rl_on_policy_evaluate, &
            torchfort_rl_on_policy_save_checkpoint, torchfort_rl_on_policy_load_checkpoint, &
            torchfort_rl_on_policy_load_model, torchfort_rl_on_policy_is_ready, &
            torchfort_rl_on_policy_reset_rollout_buffer

  interface torchfort_train
    module procedure train_real32, train_real64
  end interface
  interface torchfort_create_distributed_model
    module procedure create_distributed_model, create_distributed_model_f08
  end interface
  interface torchfort_load_checkpoint
    module procedure load_checkpoint_int64, load_checkpoint_int32
  end interface
  interface torchfort_wandb_log
    module procedure wandb_log_int, wandb_log_float, wandb_log_double, wandb_log_float_int32step, &
                     wandb_log_double_int32step
  end interface

  interface
    integer(c_int) function c_create_model(name, config, device) bind(C, name="torchfort_create_model")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name, config
      integer(c_int), value :: device
    end function
    integer(c_int) function c_create_distributed_model(name, config, comm, device) &
        bind(C, name="torchfort_create_distributed_model_F")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name, config
      integer(c_int), value :: comm, device
    end function
    integer(c_int) function c_name_file(name, file) bind(C)
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: name, file
    end function
    integer(c_int) function c_load_checkpoint(name, dir, step_train, step_inference) &
        bind(C, name="torchfort_load_checkpoint")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name, dir
      integer(c_int64_t), intent(out) :: step_train, step_inference
    end function
    integer(c_int) function c_flag(flag) bind(C)
      import :: c_int, c_bool
      logical(c_bool), value :: flag
    end function
    integer(c_int) function c_seed(seed) bind(C)
      import :: c_int
      integer(c_int), value :: seed
    end function
    integer(c_int) function c_list_create(list) bind(C, name="torchfort_tensor_list_create")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: list
    end function
    integer(c_int) function c_list_destroy(list) bind(C, name="torchfort_tensor_list_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: list
    end function
    integer(c_int) function c_list_add(list, tensor) bind(C, name="ktr_tensor_list_add_F")
      import :: c_int, c_ptr
      type(c_ptr), value :: list
      type(*), dimension(..), intent(in) :: tensor
    end function
    integer(c_int) function c_train_multiarg(name, inputs, labels, loss, extra, stream) &
        bind(C, name="torchfort_train_multiarg")
      import :: c_char, c_int, c_ptr, c_float
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_ptr), value :: inputs, labels, extra, stream
      real(c_float), intent(out) :: loss
    end function
    integer(c_int) function c_wandb_log_int(name, metric, step, val) bind(C, name="torchfort_wandb_log_int")
      import :: c_char, c_int, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name, metric
      integer(c_int64_t), value :: step
      integer(c_int), value :: val
    end function
    integer(c_int) function c_wandb_log_float(name, metric, step, val) bind(C, name="torchfort_wandb_log_float")
      import :: c_char, c_int, c_int64_t, c_float
      character(kind=c_char), dimension(*), intent(in) :: name, metric
      integer(c_int64_t), value :: step
      real(c_float), value :: val
    end function
    integer(c_int) function c_wandb_log_double(name, metric, step, val) bind(C, name="torchfort_wandb_log_double")
      import :: c_char, c_int, c_int64_t, c_double
      character(kind=c_char), dimension(*), intent(in) :: name, metric
      integer(c_int64_t), value :: step
      real(c_double), value :: val
    end function
    integer(c_int) function c_inference_multiarg(name, inputs, outputs, stream) &
        bind(C, name="torchfort_inference_multiarg")
      import :: c_char, c_int, c_ptr
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_ptr), value :: inputs, outputs, stream
    end function
  end interface

  procedure(c_name_file), bind(C, name="torchfort_save_model") :: c_save_model
  procedure(c_name_file), bind(C, name="torchfort_load_model") :: c_load_model
  procedure(c_name_file), bind(C, name="torchfort_save_checkpoint") :: c_save_checkpoint
  procedure(c_flag), bind(C, name="torchfort_set_cudnn_benchmark") :: c_set_cudnn_benchmark
  procedure(c_flag), bind(C, name="torchfort_set_cuda_allow_tf32") :: c_set_cuda_allow_tf32
  procedure(c_seed), bind(C, name="torchfort_set_manual_seed") :: c_set_manual_seed
  procedure(c_seed), bind(C, name="torchfort_set_cuda_manual_seed") :: c_set_cuda_manual_seed

contains

  ! The status, with ktr's message on stderr when it is a failure of a call made through module ktr (the C
  ! calls named torchfort_* print their own).
  integer(c_int) function printed(call, istat)
    character(len=*), intent(in) :: call
    integer, intent(in) :: istat
    if (istat /= TORCHFORT_RESULT_SUCCESS) write (error_unit, '(a)') 'TORCHFORT::ERROR: ' // call // ': ' // &
                                                                       ktr_last_error()
    printed = int(istat, c_int)
  end function

  type(c_ptr) function stream_ptr(stream)
    integer(int64), intent(in), optional :: stream
    stream_ptr = c_null_ptr
    if (present(stream)) stream_ptr = transfer(stream, c_null_ptr)
  end function

  integer(c_int) function torchfort_create_model(mname, fname, dev) result(res)
    character(len=*), intent(in) :: mname, fname
    integer(c_int), intent(in) :: dev
    res = c_create_model(c_string(mname), c_string(fname), dev)
  end function

  integer(c_int) function create_distributed_model(mname, fname, comm, dev) result(res)
    character(len=*), intent(in) :: mname, fname
    integer, intent(in) :: comm
    integer(c_int), intent(in) :: dev
    res = c_create_distributed_model(c_string(mname), c_string(fname), int(comm, c_int), dev)
  end function

  integer(c_int) function create_distributed_model_f08(mname, fname, comm, dev) result(res)
    character(len=*), intent(in) :: mname, fname
    type(MPI_Comm), intent(in) :: comm
    integer(c_int), intent(in) :: dev
    res = c_create_distributed_model(c_string(mname), c_string(fname), int(comm%MPI_VAL, c_int), dev)
  end function

  integer(c_int) function train_real32(mname, input, label, loss_val, stream) result(res)
    character(len=*), intent(in) :: mname
    type(*), dimension(..), intent(in) :: input, label
    real(real32), intent(out) :: loss_val
    integer(int64), intent(in), optional :: stream
    real(c_float) :: loss
    res = printed('torchfort_train', ktr_train(mname, input, label, loss, stream))
    if (res == TORCHFORT_RESULT_SUCCESS) loss_val = loss
  end function

  integer(c_int) function train_real64(mname, input, label, loss_val, stream) result(res)
    character(len=*), intent(in) :: mname
    type(*), dimension(..), intent(in) :: input, label
    real(real64), intent(out) :: loss_val
    integer(int64), intent(in), optional :: stream
    real(c_float) :: loss
    res = printed('torchfort_train', ktr_train(mname, input, label, loss, stream))
    if (res == TORCHFORT_RESULT_SUCCESS) loss_val = real(loss, real64)
  end function

  integer(c_int) function torchfort_inference(mname, input, output, stream) result(res)
    character(len=*), intent(in) :: mname
    type(*), dimension(..), intent(in) :: input
    type(*), dimension(..), intent(inout) :: output
    integer(int64), intent(in), optional :: stream
    res = printed('torchfort_inference', ktr_inference(mname, input, output, stream))
  end function

  integer(c_int) function torchfort_train_multiarg(mname, inputs, labels, loss_val, extra_loss_args, stream) &
      result(res)
    character(len=*), intent(in) :: mname
    type(c_ptr), intent(in) :: inputs, labels
    real(real32), intent(out) :: loss_val
    type(c_ptr), intent(in), optional :: extra_loss_args
    integer(int64), intent(in), optional :: stream
    type(c_ptr) :: extra
    real(c_float) :: loss
    extra = c_null_ptr
    if (present(extra_loss_args)) extra = extra_loss_args
    res = c_train_multiarg(c_string(mname), inputs, labels, loss, extra, stream_ptr(stream))
    if (res == TORCHFORT_RESULT_SUCCESS) loss_val = loss
  end function

  integer(c_int) function torchfort_inference_multiarg(mname, inputs, outputs, stream) result(res)
    character(len=*), intent(in) :: mname
    type(c_ptr), intent(in) :: inputs, outputs
    integer(int64), intent(in), optional :: stream
    res = c_inference_multiarg(c_string(mname), inputs, outputs, stream_ptr(stream))
  end function

  integer(c_int) function torchfort_save_model(mname, fname) result(res)
    character(len=*), intent(in) :: mname, fname
    res = c_save_model(c_string(mname), c_string(fname))
  end function

  integer(c_int) function torchfort_load_model(mname, fname) result(res)
    character(len=*), intent(in) :: mname, fname
    res = c_load_model(c_string(mname), c_string(fname))
  end function

  integer(c_int) function torchfort_save_checkpoint(mname, checkpoint_dir) result(res)
    character(len=*), intent(in) :: mname, checkpoint_dir
    res = c_save_checkpoint(c_string(mname), c_string(checkpoint_dir))
  end function

  integer(c_int) function load_checkpoint_int64(mname, checkpoint_dir, step_train, step_inference) result(res)
    character(len=*), intent(in) :: mname, checkpoint_dir
    integer(int64), intent(out) :: step_train, step_inference
    integer(c_int64_t) :: st, si
    res = c_load_checkpoint(c_string(mname), c_string(checkpoint_dir), st, si)
    if (res == TORCHFORT_RESULT_SUCCESS) then
      step_train = st
      step_inference = si
    end if
  end function

  ! Default integers, as TorchFort's own examples pass: refused (not wrapped) where the steps do not fit.
  integer(c_int) function load_checkpoint_int32(mname, checkpoint_dir, step_train, step_inference) result(res)
    character(len=*), intent(in) :: mname, checkpoint_dir
    integer(int32), intent(out) :: step_train, step_inference
    integer(c_int64_t) :: st, si
    res = c_load_checkpoint(c_string(mname), c_string(checkpoint_dir), st, si)
    if (res /= TORCHFORT_RESULT_SUCCESS) return
    if (st > huge(step_train) .or. si > huge(step_inference)) then
      write (error_unit, '(a)') 'TORCHFORT::ERROR: torchfort_load_checkpoint: the steps do not fit a default ' // &
                                'integer: pass integer(int64) steps'
      res = TORCHFORT_RESULT_INVALID_USAGE
      return
    end if
    step_train = int(st, int32)
    step_inference = int(si, int32)
  end function

  integer(c_int) function torchfort_set_cudnn_benchmark(flag) result(res)
    logical, intent(in) :: flag
    res = c_set_cudnn_benchmark(logical(flag, c_bool))
  end function

  integer(c_int) function torchfort_set_cuda_allow_tf32(flag) result(res)
    logical, intent(in) :: flag
    res = c_set_cuda_allow_tf32(logical(flag, c_bool))
  end function

  integer(c_int) function torchfort_set_manual_seed(seed) result(res)
    integer(c_int), intent(in) :: seed
    res = c_set_manual_seed(seed)
  end function

  integer(c_int) function torchfort_set_cuda_manual_seed(seed) result(res)
    integer(c_int), intent(in) :: seed
    res = c_set_cuda_manual_seed(seed)
  end function

  ! Weights & Biases logging: TorchFort's metric log ($TORCHFORT_LOGDIR/torchfort.log, general.enable_wandb_hook).
  integer(c_int) function wandb_log_int(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int64), intent(in) :: step
    integer(int32), intent(in) :: val
    res = c_wandb_log_int(c_string(mname), c_string(metric_name), int(step, c_int64_t), int(val, c_int))
  end function
  integer(c_int) function wandb_log_float(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int64), intent(in) :: step
    real(real32), intent(in) :: val
    res = c_wandb_log_float(c_string(mname), c_string(metric_name), int(step, c_int64_t), real(val, c_float))
  end function
  integer(c_int) function wandb_log_double(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int64), intent(in) :: step
    real(real64), intent(in) :: val
    res = c_wandb_log_double(c_string(mname), c_string(metric_name), int(step, c_int64_t), real(val, c_double))
  end function
  integer(c_int) function wandb_log_float_int32step(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int32), intent(in) :: step
    real(real32), intent(in) :: val
    res = c_wandb_log_float(c_string(mname), c_string(metric_name), int(step, c_int64_t), real(val, c_float))
  end function
  integer(c_int) function wandb_log_double_int32step(mname, metric_name, step, val) result(res)
    character(len=*), intent(in) :: mname, metric_name
    integer(int32), intent(in) :: step
    real(real64), intent(in) :: val
    res = c_wandb_log_double(c_string(mname), c_string(metric_name), int(step, c_int64_t), real(val, c_double))
  end function

  integer(c_int) function torchfort_tensor_list_create(tensor_list) result(res)
    type(c_ptr), intent(out) :: tensor_list
    res = c_list_create(tensor_list)
  end function

  integer(c_int) function torchfort_tensor_list_destroy(tensor_list) result(res)
    type(c_ptr), intent(in) :: tensor_list
    res = c_list_destroy(tensor_list)
  end function

  integer(c_int) function torchfort_tensor_list_add_tensor(tensor_list, tensor) result(res)
    type(c_ptr), intent(in) :: tensor_list
    type(*), dimension(..), intent(in) :: tensor
    res = printed('torchfort_tensor_list_add_tensor', int(c_list_add(tensor_list, tensor)))
  end function

end module torchfort
